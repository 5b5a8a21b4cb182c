//! Running real fio with this engine, and `zns bench` on the same job files,
//! for the tests and the `fio_vs_bench` comparison (scripts/fio-vs-bench):
//! locating the fio binary and `libznskit_fio.so` that
//! scripts/build-fio-engine built, rewriting a job file's `ioengine=` lines
//! to the engine, and reading per-group bandwidth out of fio's JSON (which
//! `zns bench` writes in the same layout; running `zns bench` itself is
//! `tests/support/bench.rs`, as zns-bench is only a dev-dependency).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

/// The fio binary and the engine library built from the same fio tree.
#[derive(Debug, Clone)]
pub struct Engine {
    pub fio: PathBuf,
    pub library: PathBuf,
}

/// The workspace root (where `examples/fio/` and `target/fio-engine/` live).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Engine {
    /// `$ZNSKIT_FIO_ENGINE_DIR` or `<workspace>/target/fio-engine`, if both
    /// files are there.
    pub fn locate() -> Option<Engine> {
        let dir = std::env::var_os("ZNSKIT_FIO_ENGINE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target/fio-engine"));
        let engine = Engine {
            fio: dir.join("fio"),
            library: dir.join("libznskit_fio.so"),
        };
        (engine.fio.is_file() && engine.library.is_file()).then_some(engine)
    }

    /// The job file `text` with every `ioengine=` line pointing at this
    /// engine (nothing else changed).
    pub fn job_text(&self, text: &str) -> String {
        let mut out = String::new();
        for line in text.lines() {
            if line.trim_start().starts_with("ioengine=") {
                out.push_str(&format!("ioengine=external:{}", self.library.display()));
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    }

    /// Runs fio on `files` with `--output-format=json` and the extra
    /// arguments; the parsed JSON, or an error with fio's stderr. fio's
    /// exit status is not judged here: the caller checks the jobs' errors.
    pub fn run(&self, files: &[PathBuf], args: &[String]) -> Result<FioRun, HarnessError> {
        let out = Command::new(&self.fio)
            .arg("--output-format=json")
            .args(args)
            .args(files)
            .output()
            .map_err(|source| HarnessError::Spawn {
                fio: self.fio.clone(),
                source,
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // fio prints error lines before the JSON document on stdout
        let json = stdout
            .find("\n{")
            .map(|i| i + 1)
            .or_else(|| stdout.starts_with('{').then_some(0))
            .and_then(|i| serde_json::from_str::<Json>(&stdout[i..]).ok())
            .ok_or_else(|| HarnessError::NoJson {
                status: out.status.to_string(),
                stdout: stdout.clone(),
                stderr: stderr.clone(),
            })?;
        Ok(FioRun {
            json,
            stderr,
            success: out.status.success(),
        })
    }
}

/// Why fio gave no report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    #[error("cannot run {}: {source}", fio.display())]
    Spawn {
        fio: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("fio printed no JSON (status {status}):\n{stdout}\n{stderr}")]
    NoJson {
        status: String,
        stdout: String,
        stderr: String,
    },
}

/// One fio run's output.
#[derive(Debug, Clone)]
pub struct FioRun {
    pub json: Json,
    pub stderr: String,
    pub success: bool,
}

/// Appends `options` (`key=value`) to the end of a job file's `[global]`
/// section, so they override what the section set earlier (a shorter
/// `runtime` for the tests, say). A file without `[global]` gets one.
pub fn with_global_options(text: &str, options: &[&str]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let global = lines.iter().position(|l| l.trim() == "[global]");
    let mut out = String::new();
    let insert_at = match global {
        Some(g) => lines[g + 1..]
            .iter()
            .position(|l| l.trim_start().starts_with('['))
            .map_or(lines.len(), |p| g + 1 + p),
        None => {
            out.push_str("[global]\n");
            for o in options {
                out.push_str(o);
                out.push('\n');
            }
            usize::MAX
        }
    };
    for (i, line) in lines.iter().enumerate() {
        if i == insert_at {
            for o in options {
                out.push_str(o);
                out.push('\n');
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    if insert_at == lines.len() {
        for o in options {
            out.push_str(o);
            out.push('\n');
        }
    }
    out
}

/// Bandwidth of one reporting group: total bytes over the longest job
/// runtime, as fio's "Run status group" line computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupBandwidth {
    pub groupid: u64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Jobs of the group whose `error` is not 0.
    pub failed_jobs: usize,
}

/// Per-group bandwidth from fio's JSON (`zns bench --output-format=json`
/// has the same layout), ordered by group id.
pub fn group_bandwidths(json: &Json) -> Vec<GroupBandwidth> {
    let mut groups: Vec<GroupBandwidth> = Vec::new();
    let mut runtimes: Vec<(u64, u64)> = Vec::new();
    for job in json["jobs"].as_array().into_iter().flatten() {
        let gid = job["groupid"].as_u64().unwrap_or(0);
        let idx = match groups.iter().position(|g| g.groupid == gid) {
            Some(i) => i,
            None => {
                groups.push(GroupBandwidth {
                    groupid: gid,
                    read_bytes_per_s: 0.0,
                    write_bytes_per_s: 0.0,
                    read_bytes: 0,
                    write_bytes: 0,
                    failed_jobs: 0,
                });
                runtimes.push((0, 0));
                groups.len() - 1
            }
        };
        let g = &mut groups[idx];
        g.read_bytes += job["read"]["io_bytes"].as_u64().unwrap_or(0);
        g.write_bytes += job["write"]["io_bytes"].as_u64().unwrap_or(0);
        if job["error"].as_i64().unwrap_or(0) != 0 {
            g.failed_jobs += 1;
        }
        let r = &mut runtimes[idx];
        r.0 = r.0.max(job["read"]["runtime"].as_u64().unwrap_or(0));
        r.1 = r.1.max(job["write"]["runtime"].as_u64().unwrap_or(0));
    }
    for (g, (read_ms, write_ms)) in groups.iter_mut().zip(runtimes) {
        if read_ms > 0 {
            g.read_bytes_per_s = g.read_bytes as f64 * 1000.0 / read_ms as f64;
        }
        if write_ms > 0 {
            g.write_bytes_per_s = g.write_bytes as f64 * 1000.0 / write_ms as f64;
        }
    }
    groups.sort_by_key(|g| g.groupid);
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_options_go_to_the_end_of_the_global_section() {
        let text = "; c\n[global]\nruntime=30\nbs=4k\n\n[a]\nrw=read\n";
        let out = with_global_options(text, &["runtime=2"]);
        assert_eq!(
            out,
            "; c\n[global]\nruntime=30\nbs=4k\n\nruntime=2\n[a]\nrw=read\n"
        );
        assert_eq!(
            with_global_options("[global]\nbs=4k\n", &["runtime=2"]),
            "[global]\nbs=4k\nruntime=2\n"
        );
        assert_eq!(
            with_global_options("[a]\nrw=read\n", &["runtime=2"]),
            "[global]\nruntime=2\n[a]\nrw=read\n"
        );
    }

    #[test]
    fn only_ioengine_lines_change() {
        let e = Engine {
            fio: PathBuf::from("/x/fio"),
            library: PathBuf::from("/x/libznskit_fio.so"),
        };
        let out = e.job_text("[global]\nioengine=psync\nfilename=zn540\n[r]\nioengine=io_uring\n");
        assert_eq!(
            out,
            "[global]\nioengine=external:/x/libznskit_fio.so\nfilename=zn540\n[r]\nioengine=external:/x/libznskit_fio.so\n"
        );
    }

    #[test]
    fn group_bandwidth_is_bytes_over_the_longest_runtime() {
        let json = serde_json::json!({"jobs": [
            {"groupid": 0, "error": 0, "read": {"io_bytes": 1000, "runtime": 1000}, "write": {"io_bytes": 0, "runtime": 0}},
            {"groupid": 0, "error": 5, "read": {"io_bytes": 3000, "runtime": 2000}, "write": {"io_bytes": 500, "runtime": 500}},
            {"groupid": 1, "error": 0, "read": {"io_bytes": 0, "runtime": 0}, "write": {"io_bytes": 10, "runtime": 10}},
        ]});
        let g = group_bandwidths(&json);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].read_bytes_per_s, 2000.0);
        assert_eq!(g[0].write_bytes_per_s, 1000.0);
        assert_eq!(g[0].failed_jobs, 1);
        assert_eq!(g[1].write_bytes_per_s, 1000.0);
    }
}
