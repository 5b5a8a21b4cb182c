//! Progress on stderr for long commands (`--eta=auto|always|never`, as
//! fio's): a bar redrawn in place on a terminal; with `always` and a
//! stderr that is not a terminal (a log, CI), one plain line a second, as
//! fio's `--eta=always` with `--eta-newline` gives, instead of nothing. A
//! bar ticks by itself, so its elapsed time never freezes while one long
//! step runs. Wall time and threads are the CLI's business, outside the
//! deterministic layers.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// When progress is shown (`--eta`, one definition for every command).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Eta {
    /// Only when stderr is a terminal.
    Auto,
    Always,
    Never,
}

impl std::str::FromStr for Eta {
    type Err = String;
    fn from_str(s: &str) -> Result<Eta, String> {
        match s {
            "auto" => Ok(Eta::Auto),
            "always" => Ok(Eta::Always),
            "never" => Ok(Eta::Never),
            _ => Err(format!("--eta={s}: expected auto, always or never")),
        }
    }
}

impl Eta {
    /// Whether progress is shown at all.
    pub fn shown(self) -> bool {
        match self {
            Eta::Always => true,
            Eta::Never => false,
            Eta::Auto => std::io::stderr().is_terminal(),
        }
    }
}

/// Progress lines for a run of long steps (`zns repro`'s application
/// runs): each line on stderr with the host time since the first, or
/// nothing when `show` is false. The libraries report the steps; the host
/// clock stays here, in the OS-facing CLI.
pub fn lines(show: bool) -> impl FnMut(&str) {
    // (the first line starts the clock)
    let mut start: Option<std::time::Instant> = None;
    move |line: &str| {
        if show {
            let t0 = *start.get_or_insert_with(std::time::Instant::now);
            eprintln!("[{:>5.0} s] {line}", t0.elapsed().as_secs_f64());
        }
    }
}

/// A progress bar of `len` steps drawn with `template` (indicatif's), or
/// None when `eta` hides progress.
pub fn bar(eta: Eta, len: u64, template: &str) -> Option<ProgressBar> {
    if !eta.shown() {
        return None;
    }
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::term_like_with_hz(Box::new(PlainLines::default()), 1)
    };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_secs(1));
    Some(bar)
}

/// A "terminal" that prints a redraw as a line of its own, at most one a
/// second.
#[derive(Debug, Default)]
struct PlainLines {
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl TermLike for PlainLines {
    fn width(&self) -> u16 {
        120
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            return Ok(());
        }
        *last = Some(std::time::Instant::now());
        writeln!(std::io::stderr(), "{s}")
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
