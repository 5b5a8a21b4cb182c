//! [`WriteOccupancy`]: how many chunk writes a run had in flight over
//! time, kept by the cache as its writes start and end.

/// How many chunk writes were in flight over a run: the pipeline's
/// occupancy of the device. With a remote fetch per miss, writers that move
/// in step leave the device idle while they all fetch.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteOccupancy {
    in_flight: u32,
    since_ns: u64,
    first_ns: Option<u64>,
    /// ∫ writes in flight dt, and the time with none, from the first write on.
    weighted_ns: u128,
    idle_ns: u64,
}

impl WriteOccupancy {
    fn advance(&mut self, now_ns: u64) {
        if self.first_ns.is_some() {
            let dt = now_ns.saturating_sub(self.since_ns);
            self.weighted_ns += u128::from(dt) * u128::from(self.in_flight);
            if self.in_flight == 0 {
                self.idle_ns += dt;
            }
        }
        self.since_ns = now_ns;
    }

    pub(crate) fn start(&mut self, now_ns: u64) {
        self.advance(now_ns);
        self.first_ns.get_or_insert(now_ns);
        self.in_flight += 1;
    }

    pub(crate) fn end(&mut self, now_ns: u64) {
        self.advance(now_ns);
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// (mean chunk writes in flight, share of the time with none) from the
    /// first write to `end_ns`; `None` before any write.
    pub(crate) fn summary(mut self, end_ns: u64) -> Option<(f64, f64)> {
        let first = self.first_ns?;
        self.advance(end_ns);
        let span = end_ns.saturating_sub(first);
        (span > 0).then(|| {
            (
                self.weighted_ns as f64 / span as f64,
                self.idle_ns as f64 / span as f64,
            )
        })
    }
}
