//! A `zns serve` process: started with `--json --stats FILE`, its devices
//! read from the JSON it prints once they exist, stopped with SIGTERM (the
//! server removes its devices and writes its counters to FILE). Dropping a
//! [`Server`] that was not stopped stops it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde::Deserialize;

use crate::AppError;

/// One device of the server, as its `--json` document lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServedDevice {
    /// The target (with ` nsid N` for one of several namespaces).
    pub target: String,
    /// `/dev/ublkbN`.
    pub path: String,
    pub zoned: bool,
}

#[derive(Deserialize)]
struct Listing {
    devices: Vec<ServedDevice>,
}

/// A running `zns serve`.
pub struct Server {
    child: Option<Child>,
    pub devices: Vec<ServedDevice>,
    stats: PathBuf,
}

impl Server {
    /// Starts `ZNS serve --json --stats STATS ARGS…` and waits until its
    /// devices exist.
    pub fn start(zns: &Path, args: &[String], stats: &Path) -> Result<Server, AppError> {
        let program = format!("{} serve", zns.display());
        let mut child = Command::new(zns)
            .arg("serve")
            .arg("--json")
            .arg("--stats")
            .arg(stats)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| AppError::Spawn {
                program: program.clone(),
                source,
            })?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        let listing = match read {
            Some(Ok(n)) if n > 0 => serde_json::from_str::<Listing>(&line).ok(),
            _ => None,
        };
        let Some(listing) = listing else {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            return Err(AppError::Failed {
                program: format!("{program} {}", args.join(" ")),
                status,
                output: format!("{err}{line}"),
            });
        };
        Ok(Server {
            child: Some(child),
            devices: listing.devices,
            stats: stats.to_path_buf(),
        })
    }

    /// The path of the device served for `target` (its first namespace
    /// when it has several), e.g. `raid:5xzn540,variant=zraid`.
    pub fn path_of(&self, target: &str) -> Option<&str> {
        self.devices
            .iter()
            .find(|d| d.target == target || d.target.starts_with(&format!("{target} nsid ")))
            .map(|d| d.path.as_str())
    }

    /// Stops the server (SIGTERM) and returns its `--stats` document.
    pub fn stop(mut self) -> Result<serde_json::Value, AppError> {
        let status = self.terminate()?;
        let program = "zns serve".to_string();
        if !status.success() {
            return Err(AppError::Failed {
                program,
                status: status.to_string(),
                output: String::new(),
            });
        }
        let text = std::fs::read_to_string(&self.stats)
            .map_err(|e| AppError::Io(format!("{}: {e}", self.stats.display())))?;
        serde_json::from_str(&text).map_err(|e| AppError::Report {
            program,
            what: format!("{}: {e}", self.stats.display()),
        })
    }

    fn terminate(&mut self) -> Result<std::process::ExitStatus, AppError> {
        let Some(mut child) = self.child.take() else {
            return Err(AppError::Io("zns serve: stopped already".into()));
        };
        // SAFETY: kill sends a signal to a process id; the child is ours
        // and has not been waited for, so the id is still its.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        // (stderr was piped: drain it so that the server cannot block on it)
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        child
            .wait()
            .map_err(|e| AppError::Io(format!("zns serve: {e}")))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.terminate();
        }
    }
}
