//! What a server did, for `zns serve --stats FILE`: the requests the kernel
//! sent each served device, by kind (count, data bytes, failures), the
//! virtual time the devices ran, and the devices' own counters (an array's
//! flash write amplification and partial-parity traffic, a controller's
//! commands), which the opener supplies. Kept on the runtime thread: no
//! locks, counted as each request completes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::request::Request;

/// Requests of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    pub requests: u64,
    /// Data moved (reads, writes, appends, write-zeroes, discards), in bytes.
    pub bytes: u64,
    pub failed: u64,
}

/// The requests one served device got, by kind name (`read`, `write`,
/// `zone-append`, `flush`, …, as [`Request::name`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    pub by_kind: BTreeMap<&'static str, KindCounts>,
}

impl RequestCounts {
    /// Counts one completed request.
    pub fn count(&mut self, req: &Request, lba_bytes: u64, ok: bool) {
        self.count_kind(req.name(), req.data_lbas() * lba_bytes, ok);
    }

    /// Counts one completed request of kind `name` that moved `bytes` of
    /// data (counted only when it succeeded): for front ends whose commands
    /// are not [`Request`]s (the NVMe/TCP target's).
    pub fn count_kind(&mut self, name: &'static str, bytes: u64, ok: bool) {
        let k = self.by_kind.entry(name).or_default();
        k.requests += 1;
        if ok {
            k.bytes += bytes;
        } else {
            k.failed += 1;
        }
    }

    /// The requests of kind `name` (zero when none came).
    pub fn kind(&self, name: &str) -> KindCounts {
        self.by_kind.get(name).copied().unwrap_or_default()
    }
}

/// One served device's part of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedStats {
    /// The name it was served by (a target, with `nsid N` for one of several namespaces).
    pub name: String,
    pub requests: RequestCounts,
}

/// What [`crate::Host::stop`] returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReport {
    /// Virtual time from the start of serving to the stop, in nanoseconds.
    pub virtual_ns: u64,
    pub served: Vec<ServedStats>,
    /// The opened devices' own counters, as the opener reports them.
    pub devices: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_kind_with_their_bytes() {
        let mut c = RequestCounts::default();
        c.count(
            &Request::Write {
                slba: 0,
                nlb: 2,
                fua: false,
            },
            4096,
            true,
        );
        c.count(
            &Request::ZoneAppend {
                zslba: 0,
                nlb: 1,
                fua: true,
            },
            4096,
            true,
        );
        c.count(
            &Request::ZoneAppend {
                zslba: 0,
                nlb: 1,
                fua: false,
            },
            4096,
            false,
        );
        c.count(&Request::Flush, 4096, true);
        assert_eq!(
            c.kind("write"),
            KindCounts {
                requests: 1,
                bytes: 8192,
                failed: 0
            }
        );
        assert_eq!(
            c.kind("zone-append"),
            KindCounts {
                requests: 2,
                bytes: 4096,
                failed: 1
            }
        );
        assert_eq!(
            c.kind("flush"),
            KindCounts {
                requests: 1,
                bytes: 0,
                failed: 0
            }
        );
        assert_eq!(c.kind("read"), KindCounts::default());
    }
}
