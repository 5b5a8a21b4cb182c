//! A crash test's parameters as a user gives them — `zns raid crashtest`'s
//! flags, a sweep point's keys, the Python package's keyword arguments —
//! named, defaulted and documented once, here: clap derives the flags and
//! serde the keys from [`CrashParams`], and [`CrashParams::shape`] turns
//! them into the [`CrashShape`] whose `check` is the one check. A new
//! parameter is a new field of this struct, and every front end has it.
//!
//! The chunk is a size under znskit's one size rule (`--chunk 64k`,
//! `chunk = "64k"`); `chunk_kib` (`--chunk-kib 64`, `chunk_kib = 64`), its
//! older spelling, is still taken.

use clap::Args;
use serde::{Deserialize, Deserializer, Serialize};
use zns_core::units::parse_bytes;
use zns_device::{Profile, ProfileError};

use crate::crashtest::{crash_profile, CrashShape, SerialLog, ShapeError};
use crate::DEFAULT_CHUNK_BYTES;

/// Members of the array unless told.
pub const DEFAULT_MEMBERS: usize = 5;
/// The chunk unless told, as the flag's default reads.
pub const DEFAULT_CHUNK: &str = "64k";
/// Logical zones the workload fills unless told.
pub const DEFAULT_ZONES: u32 = 3;
/// Writes in flight unless told.
pub const DEFAULT_QD: usize = 1;
/// The latest power-cut instant unless told, virtual ms.
pub const DEFAULT_MAX_CUT_MS: f64 = 15.0;
/// Trials per policy unless told (`zns raid crashtest --seed S`: 1).
pub const DEFAULT_TRIALS: u64 = 100;

/// A chunk size under the one size rule (clap's value parser).
fn chunk_bytes(text: &str) -> Result<u64, String> {
    parse_bytes(text).map_err(|e| e.to_string())
}

/// A size given as a number of bytes or as text under the size rule
/// (serde: `chunk = 65536` or `chunk = "64k"`).
fn size_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }
    match Size::deserialize(d)? {
        Size::Bytes(b) => Ok(b),
        Size::Text(t) => parse_bytes(&t).map_err(serde::de::Error::custom),
    }
}

/// A crash test's parameters (the policy, the seed and how the result is
/// shown are the front ends').
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrashParams {
    /// Trials per policy (default 100, or 1 with --seed).
    #[arg(long)]
    pub trials: Option<u64>,
    /// Fail one member (chosen by the seed) after power returns, recover degraded, rebuild onto a spare.
    #[arg(long)]
    pub fail_device: bool,
    /// Members of the array.
    #[arg(long, default_value_t = DEFAULT_MEMBERS)]
    pub members: usize,
    /// Chunk size, as fio writes sizes (64k, 128k; a plain number is bytes).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_CHUNK, value_parser = chunk_bytes)]
    #[serde(deserialize_with = "size_bytes")]
    pub chunk: u64,
    /// Chunk size in KiB: the older spelling of --chunk, still taken.
    #[arg(long, hide = true, conflicts_with = "chunk")]
    pub chunk_kib: Option<u64>,
    /// Logical zones the workload fills one after the other.
    #[arg(long, default_value_t = DEFAULT_ZONES)]
    pub zones: u32,
    /// Writes in flight.
    #[arg(long, default_value_t = DEFAULT_QD)]
    pub qd: usize,
    /// Latest power-cut instant, in virtual milliseconds (the cut is uniform in [0.1 ms, this]).
    #[arg(long, default_value_t = DEFAULT_MAX_CUT_MS)]
    pub max_cut_ms: f64,
    /// Member profile (default: the ZN540 with 8 zones of 4 MiB capacity).
    #[arg(long)]
    pub profile: Option<String>,
    /// Advance write pointers over a write's stripes only when the whole write
    /// completed, as the paper's ZRAID does (default: per completed stripe).
    #[arg(long)]
    pub per_write_progress: bool,
}

impl Default for CrashParams {
    fn default() -> Self {
        CrashParams {
            trials: None,
            fail_device: false,
            members: DEFAULT_MEMBERS,
            chunk: DEFAULT_CHUNK_BYTES,
            chunk_kib: None,
            zones: DEFAULT_ZONES,
            qd: DEFAULT_QD,
            max_cut_ms: DEFAULT_MAX_CUT_MS,
            profile: None,
            per_write_progress: false,
        }
    }
}

impl CrashParams {
    /// The names every front end takes, in order: the fields' (serde's
    /// names, which clap spells with `-`).
    pub fn names() -> Vec<String> {
        match serde_json::to_value(CrashParams::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The chunk in bytes, whichever spelling gave it.
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_kib
            .map_or(self.chunk, |kib| kib.saturating_mul(1024))
    }

    /// The shape these parameters make, with `trials` when none was given
    /// and the paper's serial log when asked for; the member profile is
    /// loaded here (its error is the front end's to report). The shape's
    /// `config` checks it.
    pub fn shape(
        &self,
        default_trials: u64,
        serial_log: Option<SerialLog>,
    ) -> Result<CrashShape, ProfileError> {
        Ok(CrashShape {
            members: self.members,
            chunk_bytes: self.chunk_bytes(),
            zones: self.zones,
            queue_depth: self.qd,
            max_cut_ms: self.max_cut_ms,
            trials: self.trials.unwrap_or(default_trials),
            fail_device: self.fail_device,
            progress_per_write: self.per_write_progress,
            serial_log,
            profile: match &self.profile {
                Some(name) => Profile::load(name)?,
                None => crash_profile(),
            },
        })
    }

    /// `e` said in the spelling the user gave: a chunk given in KiB is
    /// named `chunk_kib` with its KiB.
    pub fn as_given(&self, mut e: ShapeError) -> ShapeError {
        if e.param == "chunk" {
            if let Some(kib) = self.chunk_kib {
                e.param = "chunk_kib";
                e.value = kib.to_string();
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::CrashParams;

    #[test]
    fn both_chunk_spellings_read_and_the_kib_one_names_its_errors() {
        let p: CrashParams = serde_json::from_str(r#"{"chunk": "128k"}"#).unwrap();
        assert_eq!(p.chunk_bytes(), 128 << 10);
        let p: CrashParams = serde_json::from_str(r#"{"chunk_kib": 32}"#).unwrap();
        assert_eq!(p.chunk_bytes(), 32 << 10);
        let p: CrashParams = serde_json::from_str(r#"{"chunk": 65536}"#).unwrap();
        assert_eq!(p.chunk_bytes(), 64 << 10);
        assert!(serde_json::from_str::<CrashParams>(r#"{"chunks": 1}"#).is_err());
        let kib: CrashParams = serde_json::from_str(r#"{"chunk_kib": 3}"#).unwrap();
        let e = kib
            .shape(1, None)
            .unwrap()
            .config(crate::Policy::WpLog)
            .unwrap_err();
        let e = kib.as_given(e);
        assert_eq!((e.param, e.value.as_str()), ("chunk_kib", "3"));
        assert_eq!(
            CrashParams::names()[..3],
            ["trials", "fail_device", "members"]
        );
    }
}
