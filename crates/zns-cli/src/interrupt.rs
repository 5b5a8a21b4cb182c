//! SIGINT (Ctrl-C) and SIGTERM (`kill`, `timeout`, systemd) during a long
//! run, handled alike, as fio handles both: the first asks the run to stop
//! at its next boundary (a `zns bench` job's next I/O, a crash trial, a
//! sweep point, a fidelity target) and report what finished, so results and
//! images are kept; a second one ends the process at once. The exit code is
//! the shell's for the signal either way: 128 + its number (130, 143).
//!
//! Commands whose run cannot stop part-way (a cache run, a repro figure)
//! install no handler of their own but [`watch_and_say`]: the first signal
//! prints what the command was doing and how to continue, then ends it.
use std::sync::atomic::{AtomicI32, Ordering};

/// The first stop signal received (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// What [`watch_and_say`]'s handler prints: set once before it is installed.
static SAY: std::sync::OnceLock<String> = std::sync::OnceLock::new();

extern "C" fn on_stop(sig: libc::c_int) {
    if RECEIVED
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

extern "C" fn on_stop_say(sig: libc::c_int) {
    if let Some(text) = SAY.get() {
        // SAFETY: write(2) and _exit are async-signal-safe; `text` is an
        // immutable String set before the handler was installed.
        unsafe {
            libc::write(2, text.as_ptr().cast(), text.len());
        }
    }
    // SAFETY: as above.
    unsafe { libc::_exit(128 + sig) };
}

fn install(handler: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handlers only touch atomics, write(2) and _exit.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// Installs the stop handler: from now on [`received`] tells whether the
/// run should stop.
pub fn watch() {
    install(on_stop);
}

/// For a run that cannot stop part-way: on the first stop signal print
/// `message` (what was running, what is kept, how to continue) and end
/// with 128 + the signal.
pub fn watch_and_say(message: String) {
    let _ = SAY.set(format!("\n{message}\n"));
    install(on_stop_say);
}

/// Whether a stop signal arrived.
pub fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst) != 0
}

/// The signal's name, e.g. `SIGTERM` (`signal` when none arrived).
pub fn name() -> &'static str {
    match RECEIVED.load(Ordering::SeqCst) {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// The exit code after a stop: 128 + the signal's number (130 for SIGINT).
pub fn exit_code() -> std::process::ExitCode {
    let sig = RECEIVED.load(Ordering::SeqCst);
    std::process::ExitCode::from((128 + if sig == 0 { libc::SIGINT } else { sig }) as u8)
}
