//! The one duration rule of znskit: a number (whole or with a fraction)
//! with an optional unit, `ns` to `d` ([`parse_duration_ns`]); fio's time
//! options, the cache's intervals and latencies and the crash test's cut
//! instants all read through it. Defined in zns-core (`zns_core::units`)
//! beside the size rule; this is where the front ends reach it.

pub use zns_core::units::{parse_duration_ns, DurationError};
