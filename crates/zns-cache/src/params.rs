//! A cache run's parameters as a user gives them — `zns cache run`'s flags,
//! a sweep point's keys, the Python package's keyword arguments — named,
//! defaulted, documented and checked once, here: clap derives the flags
//! and serde the keys from [`CacheRunParams`] (and `zns cache
//! gen-workload`'s device flags from [`CacheDeviceParams`]), and
//! [`CacheRunParams::spec`] reads them into the [`RunSpec`] `run_cache`
//! takes. A new parameter is a new field here, and every front end has it.
//!
//! Values that have a grammar (sizes, durations, host stacks, policies) are
//! kept as the user wrote them and read by their one parser in `spec`; a
//! value that does not read is a parameter error naming it.

use clap::Args;
use serde::{Deserialize, Deserializer, Serialize};
use zns_device::StoreKind;
use zns_target::{TargetError, TargetSpec};

use crate::backend::ZnsWrite;
use crate::cache::{CacheConfig, FetchOrder, Policy};
use crate::error::CacheError;
use crate::remote::RemoteLatency;
use crate::run::{DeviceSpec, Precondition, RunSpec, WorkloadSpec};
use crate::units::parse_duration_ns;
use crate::workload::Distribution;

/// Text, or a number taken as its text (a sweep's `chunk = 65536`,
/// `remote_latency = 0`).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Text(String),
        Number(serde_json::Number),
    }
    Ok(match Text::deserialize(d)? {
        Text::Text(s) => s,
        Text::Number(n) => n.to_string(),
    })
}

/// [`text`], optional.
fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d).map(Some)
}

/// A size under the one size rule; the error names the parameter.
fn size(param: &str, value: &str) -> Result<u64, CacheError> {
    zns_target::parse_bytes(value).map_err(|e| CacheError::Param(format!("{param}: {e}")))
}

/// The device and the cache's shape (`zns cache run` and `zns cache
/// gen-workload` both take them).
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheDeviceParams {
    /// Device profile (built-in name or TOML file). A zoned namespace gets the
    /// ZNS backend, a conventional one the block backend. Or a RAID array of
    /// identical zoned devices, as `zns bench` takes it:
    /// raid:5xzn540[,variant=raizn+][,chunk=64k][,policy=wplog][,stack=none]
    /// (--set then applies to every member).
    #[arg(long, default_value = "zn540")]
    #[serde(deserialize_with = "text")]
    pub device: String,
    /// Namespace (default: the first zoned namespace, else the first).
    #[arg(long)]
    pub nsid: Option<u32>,
    /// Override a profile value (repeatable), e.g. --set namespace.0.capacity_lbas=2621440.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Chunk size (64k, 256m, 512m, ...).
    #[arg(long, default_value = "64k")]
    #[serde(deserialize_with = "text")]
    pub chunk: String,
    /// Zones (block: regions) the cache uses, from the first (default: all).
    #[arg(long)]
    pub zones: Option<u32>,
    /// Block backend region size (default 1077 MiB, the ZN540 zone capacity).
    #[arg(long, value_name = "SIZE")]
    #[serde(deserialize_with = "opt_text")]
    pub region: Option<String>,
}

impl Default for CacheDeviceParams {
    fn default() -> Self {
        CacheDeviceParams {
            device: "zn540".into(),
            nsid: None,
            set: Vec::new(),
            chunk: "64k".into(),
            zones: None,
            region: None,
        }
    }
}

impl CacheDeviceParams {
    /// The device: its name read by zns-target (a malformed name is a
    /// parameter error, a profile that will not load bad input), an array
    /// of identical members only, with the `--set` overrides.
    pub fn device_spec(&self) -> Result<DeviceSpec, CacheError> {
        let device = &self.device;
        let target = TargetSpec::parse(device).map_err(|e| {
            let msg = format!("device {device}: {e}");
            match e {
                TargetError::Spec(_) | TargetError::Size(_) => CacheError::Param(msg),
                _ => CacheError::Device(msg),
            }
        })?;
        if let TargetSpec::Raid(r) = &target {
            let mut names = r.member_names();
            let first = names.next().unwrap_or_default();
            if let Some(other) = names.find(|m| *m != first) {
                return Err(CacheError::Param(format!(
                    "device {device}: the cache's arrays need identical members ({first} and {other})"
                )));
            }
        }
        let overrides = self
            .set
            .iter()
            .map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| CacheError::Param(format!("set {kv}: expected KEY=VALUE")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let target = target
            .with_overrides(&overrides)
            .map_err(|e| CacheError::Device(format!("device {device}: {e}")))?;
        let mut d = DeviceSpec::new(target);
        d.nsid = self.nsid;
        d.region_bytes = self
            .region
            .as_deref()
            .map(|r| size("region", r))
            .transpose()?;
        Ok(d)
    }

    /// The cache's shape (the rest of [`CacheConfig`] at its defaults).
    pub fn config(&self) -> Result<CacheConfig, CacheError> {
        Ok(CacheConfig {
            chunk_bytes: size("chunk", &self.chunk)?,
            zones: self.zones,
            ..CacheConfig::default()
        })
    }
}

/// A cache run with a generated workload (a workload file or a trace is
/// the CLI's, given to [`CacheRunParams::spec`] instead).
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheRunParams {
    #[command(flatten)]
    #[serde(flatten)]
    pub device: CacheDeviceParams,
    /// Eviction policy: zplru (zone LRU, no host GC) or clru (chunk LRU; host GC on ZNS).
    #[arg(long, default_value = "zplru")]
    #[serde(deserialize_with = "text")]
    pub policy: String,
    /// Working set ÷ cache size for generated workloads (2 = 1:2, 10 = 1:10).
    #[arg(long, default_value_t = 2.0)]
    pub ratio: f64,
    /// Generated workload: zipf (YCSB, θ = 0.99) or uniform.
    #[arg(long, default_value = "zipf")]
    #[serde(deserialize_with = "text")]
    pub distribution: String,
    /// Requests of the generated workload.
    #[arg(long, default_value_t = 100_000)]
    pub requests: u64,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    pub workload_seed: u64,
    /// Passes over the workload.
    #[arg(long, default_value_t = 1)]
    pub iterations: u32,
    /// Stop issuing requests after this much virtual time (e.g. 1h, 90s).
    #[arg(long)]
    #[serde(deserialize_with = "opt_text")]
    pub duration: Option<String>,
    /// Concurrent worker tasks.
    #[arg(long, default_value_t = 64)]
    pub workers: u32,
    /// Remote fetch latency: measured (the paper's appendix A mean, by chunk size, every fetch the same), measured-spread (log-normal per fetch with appendix A's mean and standard deviation), 0, or a duration (40ms).
    #[arg(long, default_value = "measured")]
    #[serde(deserialize_with = "text")]
    pub remote_latency: String,
    /// Free-zone watermark: eviction starts when free zones <= HIGH.
    #[arg(long, default_value_t = 2)]
    pub high: u32,
    /// Free-zone watermark: eviction goes on until LOW zones are free.
    #[arg(long, default_value_t = 4)]
    pub low: u32,
    /// CLRU free-chunk watermark: eviction starts at this many free chunks
    /// (default: (low + 1) zones of chunks).
    #[arg(long)]
    pub chunk_high: Option<u64>,
    /// CLRU free-chunk watermark: eviction goes on until this many chunks
    /// are free (default: chunk-high + half a zone of chunks).
    #[arg(long)]
    pub chunk_low: Option<u64>,
    /// Zones written at once by inserts (default: the device's active-zone limit).
    #[arg(long)]
    pub max_active: Option<u32>,
    /// When a miss fetches from the remote store: hold-zone (ZNCache: take an
    /// active zone, fetch, write; at most --max-active misses in flight) or
    /// fetch-first (fetch, then take a zone; every worker's miss in flight).
    #[arg(long, default_value = "hold-zone")]
    #[serde(deserialize_with = "text")]
    pub fetch_order: String,
    /// Background eviction poll interval.
    #[arg(long, default_value = "100ms")]
    #[serde(deserialize_with = "text")]
    pub eviction_interval: String,
    /// Bytes per device command (default: the device's MDTS).
    #[arg(long)]
    #[serde(deserialize_with = "opt_text")]
    pub io_size: Option<String>,
    /// Commands of one chunk in flight.
    #[arg(long, default_value_t = 8)]
    pub io_depth: u32,
    /// ZNS writes: wp (writes at the write pointer, ZNCache's way) or append (Zone Append).
    #[arg(long, default_value = "wp")]
    #[serde(deserialize_with = "text")]
    pub zns_write: String,
    /// Host stack (default: io-uring-mq-deadline on ZNS, io-uring-none on block, as the paper).
    #[arg(long)]
    #[serde(deserialize_with = "opt_text")]
    pub host_stack: Option<String>,
    /// Fill the device first: none, sequential, random (block: 64 KiB random writes over the namespace), random-steady (block: two such passes, the second over a full drive: a random-write steady state, as a drive in use that is never trimmed).
    #[arg(long, default_value = "none")]
    #[serde(deserialize_with = "text")]
    pub precondition: String,
    /// Block backend: deallocate (TRIM) evicted regions and chunk slots (ZNCache does not).
    #[arg(long)]
    pub discard: bool,
    /// Keep bytes and check every hit against the bytes stored for its key (slow; memory).
    #[arg(long)]
    pub verify: bool,
    /// Diagnostic, not ZNCache's behaviour: start worker w at w × (mean remote
    /// fetch ÷ zones written at once), so the first zone holders fetch and
    /// write out of step instead of together (with a constant remote latency
    /// they stay in step and the device idles between rounds).
    #[arg(long)]
    pub stagger_start: bool,
    /// Time-series interval (virtual).
    #[arg(long, default_value = "1s")]
    #[serde(deserialize_with = "text")]
    pub interval: String,
    /// Runtime seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl Default for CacheRunParams {
    fn default() -> Self {
        CacheRunParams {
            device: CacheDeviceParams::default(),
            policy: "zplru".into(),
            ratio: 2.0,
            distribution: "zipf".into(),
            requests: 100_000,
            workload_seed: 1,
            iterations: 1,
            duration: None,
            workers: 64,
            remote_latency: "measured".into(),
            high: 2,
            low: 4,
            chunk_high: None,
            chunk_low: None,
            max_active: None,
            fetch_order: "hold-zone".into(),
            eviction_interval: "100ms".into(),
            io_size: None,
            io_depth: 8,
            zns_write: "wp".into(),
            host_stack: None,
            precondition: "none".into(),
            discard: false,
            verify: false,
            stagger_start: false,
            interval: "1s".into(),
            seed: 0,
        }
    }
}

impl CacheRunParams {
    /// The names every front end takes (serde's; clap spells them with
    /// `-`), in order.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(CacheRunParams::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The run these parameters make: with the generated workload they
    /// describe unless `workload` is given (a workload file, a trace).
    pub fn spec(&self, workload: Option<WorkloadSpec>) -> Result<RunSpec, CacheError> {
        let mut dev = self.device.device_spec()?;
        let mut cfg = self.device.config()?;
        cfg.policy = Policy::parse(&self.policy)?;
        cfg.zone_high = self.high;
        cfg.zone_low = self.low;
        cfg.chunk_high = self.chunk_high;
        cfg.chunk_low = self.chunk_low;
        cfg.max_active_zones = self.max_active;
        cfg.fetch_order = FetchOrder::parse(&self.fetch_order)?;
        cfg.eviction_interval_ns = parse_duration_ns(&self.eviction_interval)?;
        cfg.io_bytes = self
            .io_size
            .as_deref()
            .map(|s| size("io_size", s))
            .transpose()?;
        cfg.io_depth = self.io_depth;
        cfg.verify = self.verify;
        dev.zns_write = match self.zns_write.as_str() {
            "wp" | "write" => ZnsWrite::WritePointer,
            "append" => ZnsWrite::Append,
            o => {
                return Err(CacheError::Param(format!(
                    "zns_write {o}: expected wp or append"
                )))
            }
        };
        dev.host_stack = self
            .host_stack
            .as_deref()
            .map(|s| {
                s.parse()
                    .map_err(|e| CacheError::Param(format!("host_stack: {e}")))
            })
            .transpose()?;
        dev.precondition = Precondition::parse(&self.precondition)?;
        dev.discard = self.discard;
        if self.verify {
            dev.store = StoreKind::Memory;
        }
        let workload = match workload {
            Some(w) => w,
            None => WorkloadSpec::Generated {
                distribution: Distribution::parse(&self.distribution)?,
                ratio: self.ratio,
                requests: self.requests,
                seed: self.workload_seed,
            },
        };
        let mut spec = RunSpec::new(dev, cfg, workload);
        spec.workers = self.workers;
        spec.remote = RemoteLatency::parse(&self.remote_latency)?;
        spec.iterations = self.iterations;
        spec.duration_ns = self
            .duration
            .as_deref()
            .map(parse_duration_ns)
            .transpose()?;
        spec.interval_ns = parse_duration_ns(&self.interval)?;
        spec.seed = self.seed;
        spec.stagger_start = self.stagger_start;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::CacheRunParams;

    #[test]
    fn numbers_read_as_text_and_the_names_are_flat() {
        let p: CacheRunParams =
            serde_json::from_str(r#"{"chunk": 65536, "remote_latency": 0, "zones": 8}"#).unwrap();
        assert_eq!(
            (p.device.chunk.as_str(), p.remote_latency.as_str()),
            ("65536", "0")
        );
        assert_eq!(p.device.zones, Some(8));
        let names = CacheRunParams::names();
        assert_eq!(names[..4], ["device", "nsid", "set", "chunk"]);
        assert!(names.contains(&"stagger_start".to_string()));
        let spec = p.spec(None).unwrap();
        assert_eq!(spec.cache.chunk_bytes, 64 << 10);
    }
}
