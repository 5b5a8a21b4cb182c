//! The timing parameters of one emulated controller (`TimingProfile`) and the
//! host-stack selector (`HostStack`).
//!
//! A profile is data: a device profile's `[timing]` table deserializes straight
//! into [`TimingProfile`] (unknown keys are rejected). Every field carries its
//! unit in its name. `docs/timing-model.md` gives each parameter's meaning and
//! the measured number it was calibrated from.

use serde::{Deserialize, Serialize};

/// Host I/O stack in front of the device. It adds a per-request CPU cost, split
/// into a submission part (before the device sees the command) and a completion
/// part (after the device posts the completion).
///
/// The mq-deadline per-zone write lock and the merging of contiguous queued
/// writes are done by the device layer in front of [`super::FlashArray::submit`];
/// the timing model charges only the per-request cost of each dispatched
/// (possibly merged) request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostStack {
    /// SPDK-like polled user-space driver: the lowest per-request overhead.
    Spdk,
    /// Linux io_uring (SQ polling) with the `none` scheduler.
    IoUringNone,
    /// Linux io_uring with the `mq-deadline` scheduler.
    IoUringMqDeadline,
    /// The device alone, no host stack modelled: for a device behind a real
    /// host stack that pays its own costs (`zns serve`: the kernel's block
    /// layer and ublk in front of it; docs/serve.md).
    Device,
}

impl HostStack {
    /// Every stack, in the order they are documented.
    pub const ALL: [HostStack; 4] = [
        HostStack::Spdk,
        HostStack::IoUringNone,
        HostStack::IoUringMqDeadline,
        HostStack::Device,
    ];

    /// Every stack's [`HostStack::name`], in [`HostStack::ALL`]'s order
    /// (option tables and help texts list them from here).
    pub const NAMES: [&'static str; 4] = [
        HostStack::ALL[0].name(),
        HostStack::ALL[1].name(),
        HostStack::ALL[2].name(),
        HostStack::ALL[3].name(),
    ];

    /// The name used in TOML files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            HostStack::Spdk => "spdk",
            HostStack::IoUringNone => "io-uring-none",
            HostStack::IoUringMqDeadline => "io-uring-mq-deadline",
            HostStack::Device => "device",
        }
    }
}

/// The one parser of host-stack names: a stack's [`HostStack::name`], or the
/// scheduler's name alone (`none`, `mq-deadline`) for the io_uring stacks.
/// The error lists the valid names.
impl std::str::FromStr for HostStack {
    type Err = String;
    fn from_str(text: &str) -> Result<HostStack, String> {
        let name = match text.trim() {
            "none" => "io-uring-none",
            "mq-deadline" => "io-uring-mq-deadline",
            other => other,
        };
        HostStack::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = HostStack::ALL.iter().map(|s| s.name()).collect();
                format!(
                    "{text:?} is not a host stack (one of {}; none and mq-deadline are short for the io-uring ones)",
                    names.join(", ")
                )
            })
    }
}

/// Where ZRWA data lives until it is committed to the zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZrwaMedium {
    /// The ZRWA is a window of the controller's write buffer (ZN540): a ZRWA
    /// write costs what a normal write costs; the flash program happens when
    /// the data is committed.
    WriteBuffer,
    /// A separate battery-backed DRAM area (PM1731a): a ZRWA write is a
    /// transfer at `zrwa_medium_mibps` on its own serial medium and completes
    /// when the transfer ends; the flash program happens when the data is
    /// committed.
    Dram,
    /// A separate non-volatile store that absorbs writes at the device's
    /// write rate (ZN540: SLC flash or a path rate-limited like it). A ZRWA
    /// write enters the write buffer like a normal write and leaves it when
    /// the serial medium (`zrwa_medium_mibps`) has taken it, so every ZRWA
    /// write, later overwritten or not, costs that bandwidth; committed data
    /// is programmed to the zone's flash as well.
    Flash,
}

impl ZrwaMedium {
    /// Whether a ZRWA write crosses a serial medium at `zrwa_medium_mibps`.
    pub fn is_rate_limited(self) -> bool {
        matches!(self, ZrwaMedium::Dram | ZrwaMedium::Flash)
    }
}

/// Timing parameters of one emulated controller and its flash.
///
/// Times are integer nanoseconds (`_ns`), sizes bytes (`_bytes`), rates MiB/s
/// (`_mibps`, 2^20 bytes per second), probabilities and fractions parts per
/// million (`_ppm`). See `docs/timing-model.md` for the model and the sources.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimingProfile {
    // ------------------------------------------------------------ host stacks
    /// SPDK: host CPU time before the command reaches the device.
    pub host_spdk_submit_ns: u64,
    /// SPDK: host CPU time after the device posts the completion.
    pub host_spdk_complete_ns: u64,
    /// io_uring + none: submission-side host cost.
    pub host_io_uring_none_submit_ns: u64,
    /// io_uring + none: completion-side host cost.
    pub host_io_uring_none_complete_ns: u64,
    /// io_uring + mq-deadline: submission-side host cost (per dispatched request).
    pub host_io_uring_mq_deadline_submit_ns: u64,
    /// io_uring + mq-deadline: completion-side host cost.
    pub host_io_uring_mq_deadline_complete_ns: u64,
    /// io_uring + mq-deadline: submission-side host cost of a read, if it
    /// differs from a write's (the scheduler's zoned write path — zone write
    /// locking, write sorting — is what writes pay; reads pass through).
    /// Default: the write's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_io_uring_mq_deadline_read_submit_ns: Option<u64>,
    /// io_uring + mq-deadline: completion-side host cost of a read. Default:
    /// the write's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_io_uring_mq_deadline_read_complete_ns: Option<u64>,
    /// fio's libaio engine: host time of `io_submit` before the command
    /// enters the host stack (syscall, iocb, bio), paid by the job's thread
    /// and counted in fio's slat (with the stack's submit cost when the
    /// command is dispatched inside the call). Not a device cost: the
    /// set-up's (ZNS-Study: 1340, the slat of a write that merges into a
    /// queued request). Default 0.
    #[serde(default)]
    pub host_libaio_submit_ns: u64,
    /// mq-deadline: host time of a write that becomes a new request of the
    /// scheduler (allocation, insertion into the zone's sorted queue) rather
    /// than merging into a queued one; in fio's slat with libaio. Default 0.
    #[serde(default)]
    pub host_mq_deadline_request_ns: u64,
    /// mq-deadline: host time to complete each write (bio) of a dispatched,
    /// possibly merged, request before the request is freed and its zone
    /// unlocked: every write of the group completes, and the zone's next
    /// dispatch happens, that much later per write in the group (the zone
    /// device layer applies it). Default 0.
    #[serde(default)]
    pub host_mq_deadline_bio_complete_ns: u64,

    // ------------------------------------------------------------- controller
    /// Command front end (fetch, decode): one serial FIFO shared by every
    /// command of every namespace. A write that waits for write-buffer space
    /// holds the front end (head-of-line blocking).
    pub frontend_ns: u64,
    /// Commands the write/append/conventional engines can hold queued behind
    /// the front end; when they are full (e.g. the write buffer stalls) the
    /// front end stops, and every later command waits (1..=64).
    pub engine_queue_slots: u32,
    /// Reads are fetched in their own front-end lane (serial,
    /// `frontend_ns` each), past writes that wait for engine-queue or
    /// write-buffer room: a controller that queues reads and writes apart.
    /// Default false: one FIFO front end, reads wait behind stalled writes
    /// (head-of-line blocking, as the ZN540's and the SN640's reads under
    /// saturating writes show, characterization Obs. 11).
    #[serde(default)]
    pub reads_pass_stalled_writes: bool,
    /// Completion-time jitter of writes and appends: uniform in +/- this,
    /// drawn from `seed` (breaks the lock-step of deterministic closed loops).
    pub io_jitter_ns: u64,
    /// Out-of-order service of queued writes and appends (not ZRWA writes):
    /// a command that waited for its engine or for write-buffer room
    /// completes up to this share (ppm) of its wait earlier or later than in
    /// arrival order, drawn uniformly from `seed`. Engine and buffer
    /// reservations are unchanged (throughput, and in a closed loop the mean
    /// latency, stay); the latency spread under contention grows. Default 0
    /// (FIFO).
    #[serde(default)]
    pub write_queue_reorder_ppm: u64,
    /// Granule of the host-data path: the first granule of a write/append is in
    /// the engine base cost, each further granule adds `*_per_extra_unit_ns`.
    pub host_xfer_unit_bytes: u64,
    /// Write engine (serial, zoned-namespace writes): occupancy per command.
    pub write_engine_ns: u64,
    /// Write engine: extra occupancy per host granule beyond the first.
    pub write_engine_per_extra_unit_ns: u64,
    /// Write engine: extra occupancy of a write smaller than one host granule
    /// (0 on a 4 KiB LBA format; large on the 512 B format).
    pub write_engine_small_extra_ns: u64,
    /// Writes pay per granule of the LBA range they touch, and the
    /// sub-granule extra when their first or last granule is partial (the
    /// granule is a mapping unit of the LBA format: the 512 B format's
    /// read-modify-write); otherwise by size alone (`ceil(bytes / granule)`,
    /// the extra below one granule). Default false.
    #[serde(default)]
    pub write_granules_by_lba: bool,
    /// The part of `write_engine_small_extra_ns` the write engine spends
    /// after the write is admitted to the buffer (background work of a
    /// sub-granule write that the completion does not wait for, but that
    /// holds the engine for the next command). Default 0: all of it is on
    /// the latency path. At most `write_engine_small_extra_ns`.
    #[serde(default)]
    pub write_engine_small_background_ns: u64,
    /// Fixed (pipelined) time from write-buffer admission to the completion.
    pub write_complete_ns: u64,
    /// Extra latency of a write that implicitly opens its zone.
    pub implicit_open_write_extra_ns: u64,
    /// Append engine (serial, separate from and slower than the write engine).
    pub append_engine_ns: u64,
    /// Append engine: extra occupancy of an append smaller than one host granule.
    pub append_engine_small_extra_ns: u64,
    /// Append engine: extra occupancy per host granule beyond the first.
    pub append_engine_per_extra_unit_ns: u64,
    /// Fixed (pipelined) time from write-buffer admission to the append completion.
    pub append_complete_ns: u64,
    /// Extra latency of an append that implicitly opens its zone.
    pub implicit_open_append_extra_ns: u64,
    /// Fixed controller time of a read before the die read starts (mapping lookup).
    pub read_controller_ns: u64,
    /// Fixed controller time of a read after the channel transfer (ECC, completion).
    pub read_complete_ns: u64,
    /// Extra completion time of a read served from flash (not of a
    /// read-ahead hit): a set-up's fixed cost of the flash-read path beyond
    /// the calibrated one (docs/timing-model.md: ZNS-Study's set-up). Default 0.
    #[serde(default)]
    pub read_flash_extra_ns: u64,
    /// Host link (PCIe) bandwidth from the device to the host: read data
    /// crosses it after the flash (or the read-ahead DRAM), one transfer at
    /// a time; 0 = unlimited (the default).
    #[serde(default)]
    pub host_link_read_mibps: u64,
    /// Flush command cost (with a power-loss-protected buffer this is all it costs).
    pub flush_ns: u64,

    // ------------------------------------------------------------------ flash
    /// Flash channels (buses).
    pub channels: u32,
    /// Dies (LUNs) per channel. Die `d` sits on channel `d % channels`.
    pub dies_per_channel: u32,
    /// Planes per die (a program unit spans all planes).
    pub planes_per_die: u32,
    /// Flash page size per plane.
    pub page_bytes: u64,
    /// Pages programmed by one (one-shot) program per plane: 3 for TLC.
    /// Program unit = planes_per_die x page_bytes x pages_per_program.
    pub pages_per_program: u32,
    /// Array read time (tR) per page type within a word line (LP, CP, UP, ...);
    /// page type = page index within the program unit modulo the list length.
    pub read_page_ns: Vec<u64>,
    /// Program time (tPROG) of one program unit on one die.
    pub program_ns: u64,
    /// Channel transfer rate.
    pub channel_mibps: u64,
    /// ECC decode rate of read data: after its channel transfer, read data
    /// passes the channel's decoder, a serial stage of its own pipelined
    /// with the transfers, so a single read pays both (QD1 latency) while
    /// under load each stage bounds the channel's read bandwidth on its own.
    /// 0 = no separate stage (the default).
    #[serde(default)]
    pub read_decode_mibps: u64,
    /// A read that spans several pages (page types) of a program unit on one
    /// die senses them one after another, and each page's data leaves the
    /// die's page register over the channel before the next sense starts (no
    /// cache read): die time `sum(tR)`, transfers in between. Default false:
    /// one sense of the slowest page type, then one transfer.
    #[serde(default)]
    pub read_pages_serial: bool,
    /// Block erase time (tBERS) on one die. Only device-side garbage
    /// collection erases blocks (an FTL namespace, `zns-device`'s `ftl`);
    /// zone resets do not touch the dies (measured on the ZN540). Default 0.
    #[serde(default)]
    pub erase_ns: u64,
    /// Device-side GC engine of an FTL namespace: how many GC program units
    /// it may have in flight at once, device-wide (its copy buffer: each GC
    /// unit holds a slot from when its die starts reading its valid data
    /// until its program ends). A relocation unit waits for a free slot, so
    /// GC moves at most `slots x unit / (reads + tPROG)` (Little's law)
    /// whatever the dies could do; the die idles meanwhile. 0 = no limit
    /// (the default: GC uses every die at once). docs/timing-model.md.
    #[serde(default)]
    pub gc_inflight_units: u32,
    /// A read (or host program) that arrives while a die executes a
    /// lower-priority program waits for the end of the current segment of
    /// this length (program suspend granularity), then pushes that program back.
    pub program_suspend_granularity_ns: u64,
    /// Read time that may push back each host program before further reads
    /// on the die wait for the queued programs to end (a bounded number of
    /// suspensions per program). 0 = no bound (the default).
    #[serde(default)]
    pub program_suspend_budget_ns: u64,
    /// Program suspend latency: a read that suspends a host program starts
    /// this much later (the die stops the program at a safe point first),
    /// and the program is pushed back by it. A NAND program suspend/resume
    /// is not free (Wu & He, FAST 2012; NAND datasheets' suspend latency).
    /// 0 = free (the default).
    #[serde(default)]
    pub program_suspend_ns: u64,
    /// Program resume re-setup: die time after the reads of a suspension
    /// before the program goes on (the interrupted program step is set up
    /// again). Reads back to back share a suspension, except while writes
    /// wait for write-buffer room: then the controller resumes the program
    /// after every read. 0 = free (the default).
    #[serde(default)]
    pub program_resume_ns: u64,

    // ----------------------------------------------------------- write buffer
    /// Controller write buffer. Writes complete once their data is in it; it
    /// drains by programming full program units; a full buffer stalls writers.
    pub write_buffer_bytes: u64,
    /// Buffer is power-loss protected: FUA and Flush need not wait for flash.
    pub write_buffer_power_loss_protected: bool,

    // ------------------------------------------------------------------ zones
    /// Zone size of the zoned namespace (LBA-space stride between zones).
    /// Must equal the device geometry; device profiles leave it out and the
    /// device layer fills it from the namespace (`zns_device::Profile`).
    #[serde(default)]
    pub zone_size_bytes: u64,
    /// Zone capacity of the zoned namespace. Must equal the device geometry;
    /// filled from the namespace like `zone_size_bytes`.
    #[serde(default)]
    pub zone_capacity_bytes: u64,
    /// Dies a zone is striped over (all dies on a large-zone device; 1 on a
    /// small-zone device). Zone z uses dies starting at `z * dies_per_zone`.
    pub dies_per_zone: u32,
    /// Explicit open (device part; host and front-end costs come on top).
    pub open_ns: u64,
    /// Close (device part).
    pub close_ns: u64,
    /// A zone-management command that changes nothing (e.g. reset of an Empty zone).
    pub zone_mgmt_noop_ns: u64,
    /// Reset: fixed part (an opened, empty zone).
    pub reset_base_ns: u64,
    /// Reset: cost per MiB of host-written data in the zone.
    pub reset_per_written_mib_ns: u64,
    /// Reset of a partially written, unfinished zone: extra cost, reached at
    /// `reset_partial_saturation_bytes` written and constant beyond.
    pub reset_partial_extra_ns: u64,
    /// See `reset_partial_extra_ns` (the extra grows linearly up to here).
    pub reset_partial_saturation_bytes: u64,
    /// Reset of a zone filled to capacity by writes: extra cost.
    pub reset_full_extra_ns: u64,
    /// Reset duration jitter: uniform in +/- this fraction, drawn from `seed`.
    pub reset_jitter_ppm: u64,
    /// Window over which recent read/write/append activity is measured.
    pub reset_interference_window_ns: u64,
    /// Probability weight that a reset is slowed, per unit of recent read busy fraction.
    pub reset_interference_read_ppm: u64,
    /// Same, for writes (zoned, conventional, ZRWA).
    pub reset_interference_write_ppm: u64,
    /// Same, for appends.
    pub reset_interference_append_ppm: u64,
    /// Duration of a slowed reset, in percent of its unslowed duration.
    pub reset_interference_slowdown_pct: u64,
    /// Finish: fixed part (on top of programming filler for the unwritten part).
    pub finish_base_ns: u64,
    /// Finish of an opened zone with nothing written (no filler is written).
    pub finish_empty_ns: u64,

    // ------------------------------------------------------------------- ZRWA
    /// Backing medium of the ZRWA.
    pub zrwa_medium: ZrwaMedium,
    /// Write rate of the ZRWA medium when it is `dram` or `flash` (unused
    /// with `write-buffer`). Accepted under its former name `zrwa_dram_mibps`.
    #[serde(alias = "zrwa_dram_mibps")]
    pub zrwa_medium_mibps: u64,
    /// Explicit ZRWA flush command (device part).
    pub zrwa_flush_ns: u64,

    // ------------------------------------------------- conventional namespace
    /// Conventional-namespace read engine (serial page-mapped lookup) occupancy.
    pub conv_read_engine_ns: u64,
    /// Conventional-namespace write engine occupancy for a write smaller than
    /// `conv_full_page_bytes` (read-modify-write of a mapping unit).
    pub conv_small_write_ns: u64,
    /// Conventional-namespace write engine occupancy for larger writes
    /// (at least `bytes / conv_write_mibps`).
    pub conv_write_ns: u64,
    /// Conventional-namespace write engine rate limit.
    pub conv_write_mibps: u64,
    /// Conventional-namespace mapping unit (writes below it are "small").
    pub conv_full_page_bytes: u64,

    // --------------------------------------------------- sequential read-ahead
    /// Sequential read streams the controller tracks (all namespaces share
    /// the table, keyed by namespace); 0 = no read-ahead (the default). At
    /// most 16.
    #[serde(default)]
    pub readahead_streams: u32,
    /// Consecutive reads, each starting where the previous one ended, after
    /// which a stream prefetches (2: the second read of a run starts it).
    #[serde(default)]
    pub readahead_trigger_reads: u32,
    /// Program units a detected stream keeps prefetched beyond the unit the
    /// host is reading (1..=16); the prefetch reads them from the dies in the
    /// background like host reads (tR + channel transfer).
    #[serde(default)]
    pub readahead_window_units: u32,
    /// Read-ahead hit engine (serial): occupancy per command served from the
    /// prefetched data, no die read (at least `bytes / readahead_hit_mibps`).
    #[serde(default)]
    pub readahead_hit_ns: u64,
    /// Read-ahead hit engine transfer rate (DRAM to host).
    #[serde(default)]
    pub readahead_hit_mibps: u64,

    // ------------------------------------------------------------ determinism
    /// Seed of the only random draws (reset jitter). Same seed, same times.
    #[serde(default)]
    pub seed: u64,
}

/// A timing profile that cannot drive the model; the message names the
/// field (`timing.channels must be > 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTimingProfile(pub String);

impl std::fmt::Display for InvalidTimingProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidTimingProfile {}

fn nonzero(name: &str, v: u64) -> Result<(), String> {
    if v == 0 {
        Err(format!("timing.{name} must be > 0"))
    } else {
        Ok(())
    }
}

impl TimingProfile {
    /// The host stack's submission-side cost of a command (what the model
    /// charges before the front end): reads under mq-deadline may cost less
    /// than writes.
    pub fn host_submit_ns(&self, stack: HostStack, read: bool) -> u64 {
        match stack {
            HostStack::Spdk => self.host_spdk_submit_ns,
            HostStack::IoUringNone => self.host_io_uring_none_submit_ns,
            HostStack::IoUringMqDeadline if read => self
                .host_io_uring_mq_deadline_read_submit_ns
                .unwrap_or(self.host_io_uring_mq_deadline_submit_ns),
            HostStack::IoUringMqDeadline => self.host_io_uring_mq_deadline_submit_ns,
            HostStack::Device => 0,
        }
    }

    /// Total dies.
    pub fn total_dies(&self) -> u32 {
        self.channels.saturating_mul(self.dies_per_channel)
    }

    /// Bytes programmed by one program operation on one die.
    pub fn program_unit_bytes(&self) -> u64 {
        u64::from(self.planes_per_die)
            .saturating_mul(self.page_bytes)
            .saturating_mul(u64::from(self.pages_per_program))
    }

    /// Sustained flash program bandwidth of the whole array (MiB/s, rounded down).
    pub fn array_program_mibps(&self) -> u64 {
        if self.program_ns == 0 {
            return 0;
        }
        let bytes_per_s =
            u128::from(self.program_unit_bytes()) * u128::from(self.total_dies()) * 1_000_000_000
                / u128::from(self.program_ns);
        (bytes_per_s >> 20) as u64
    }

    /// Checks the profile; the error names the offending field.
    pub fn validate(&self) -> Result<(), InvalidTimingProfile> {
        self.check().map_err(InvalidTimingProfile)
    }

    fn check(&self) -> Result<(), String> {
        nonzero("channels", u64::from(self.channels))?;
        nonzero("dies_per_channel", u64::from(self.dies_per_channel))?;
        nonzero("planes_per_die", u64::from(self.planes_per_die))?;
        nonzero("page_bytes", self.page_bytes)?;
        nonzero("pages_per_program", u64::from(self.pages_per_program))?;
        nonzero("program_ns", self.program_ns)?;
        nonzero("channel_mibps", self.channel_mibps)?;
        nonzero("host_xfer_unit_bytes", self.host_xfer_unit_bytes)?;
        nonzero("zone_size_bytes", self.zone_size_bytes)?;
        nonzero("zone_capacity_bytes", self.zone_capacity_bytes)?;
        nonzero("dies_per_zone", u64::from(self.dies_per_zone))?;
        nonzero("conv_write_mibps", self.conv_write_mibps)?;
        nonzero("conv_full_page_bytes", self.conv_full_page_bytes)?;
        nonzero(
            "reset_interference_window_ns",
            self.reset_interference_window_ns,
        )?;
        if self.zrwa_medium.is_rate_limited() {
            nonzero("zrwa_medium_mibps", self.zrwa_medium_mibps)?;
        }
        if self.readahead_streams > 16 {
            return Err(format!(
                "timing.readahead_streams = {} must be at most 16",
                self.readahead_streams
            ));
        }
        if self.readahead_streams > 0 {
            nonzero(
                "readahead_trigger_reads",
                u64::from(self.readahead_trigger_reads),
            )?;
            nonzero("readahead_hit_mibps", self.readahead_hit_mibps)?;
            if self.readahead_window_units == 0 || self.readahead_window_units > 16 {
                return Err(format!(
                    "timing.readahead_window_units = {} must be in 1..=16",
                    self.readahead_window_units
                ));
            }
        }
        if self.total_dies() > 1 << 16 {
            return Err(format!(
                "timing.channels x timing.dies_per_channel = {} dies; at most 65536 are supported",
                self.total_dies()
            ));
        }
        if self.engine_queue_slots == 0 || self.engine_queue_slots > 64 {
            return Err(format!(
                "timing.engine_queue_slots = {} must be in 1..=64",
                self.engine_queue_slots
            ));
        }
        if self.io_jitter_ns > self.write_complete_ns.min(self.append_complete_ns) {
            return Err(format!(
                "timing.io_jitter_ns = {} must not exceed write_complete_ns and append_complete_ns",
                self.io_jitter_ns
            ));
        }
        if self.read_page_ns.is_empty() {
            return Err("timing.read_page_ns must list at least one page read time".into());
        }
        if self.read_page_ns.len() > 16 {
            return Err(format!(
                "timing.read_page_ns lists {} page types; at most 16 are supported",
                self.read_page_ns.len()
            ));
        }
        if let Some(i) = self.read_page_ns.iter().position(|&v| v == 0) {
            return Err(format!("timing.read_page_ns[{i}] must be > 0"));
        }
        if self.page_bytes > 1 << 24 {
            return Err(format!(
                "timing.page_bytes = {} is larger than 16 MiB",
                self.page_bytes
            ));
        }
        if self.program_unit_bytes() > 1 << 30 {
            return Err(format!(
                "timing.planes_per_die x page_bytes x pages_per_program = {} bytes; at most 1 GiB",
                self.program_unit_bytes()
            ));
        }
        if self.dies_per_zone > self.total_dies() {
            return Err(format!(
                "timing.dies_per_zone = {} exceeds the {} dies (channels x dies_per_channel)",
                self.dies_per_zone,
                self.total_dies()
            ));
        }
        for (name, v, max) in [
            ("zone_size_bytes", self.zone_size_bytes, 1u64 << 50),
            ("zone_capacity_bytes", self.zone_capacity_bytes, 1 << 50),
            ("write_buffer_bytes", self.write_buffer_bytes, 1 << 40),
            ("host_xfer_unit_bytes", self.host_xfer_unit_bytes, 1 << 30),
            ("conv_full_page_bytes", self.conv_full_page_bytes, 1 << 30),
            (
                "reset_partial_saturation_bytes",
                self.reset_partial_saturation_bytes,
                1 << 50,
            ),
        ] {
            if v > max {
                return Err(format!(
                    "timing.{name} = {v} exceeds the supported maximum {max}"
                ));
            }
        }
        if self.zone_capacity_bytes > self.zone_size_bytes {
            return Err(format!(
                "timing.zone_capacity_bytes = {} exceeds timing.zone_size_bytes = {}",
                self.zone_capacity_bytes, self.zone_size_bytes
            ));
        }
        if self.gc_inflight_units > 1 << 16 {
            return Err(format!(
                "timing.gc_inflight_units = {} exceeds the supported maximum 65536",
                self.gc_inflight_units
            ));
        }
        let min_buffer = self.program_unit_bytes().saturating_mul(4);
        if self.write_buffer_bytes < min_buffer {
            return Err(format!(
                "timing.write_buffer_bytes = {} must hold at least 4 program units ({} bytes)",
                self.write_buffer_bytes, min_buffer
            ));
        }
        for (name, v) in [
            ("channel_mibps", self.channel_mibps),
            ("conv_write_mibps", self.conv_write_mibps),
            ("zrwa_medium_mibps", self.zrwa_medium_mibps),
            ("readahead_hit_mibps", self.readahead_hit_mibps),
            ("host_link_read_mibps", self.host_link_read_mibps),
            ("read_decode_mibps", self.read_decode_mibps),
        ] {
            if v > 1 << 24 {
                return Err(format!(
                    "timing.{name} = {v} MiB/s is unreasonably large (max 16777216)"
                ));
            }
        }
        if self.write_engine_small_background_ns > self.write_engine_small_extra_ns {
            return Err(format!(
                "timing.write_engine_small_background_ns = {} exceeds write_engine_small_extra_ns = {}",
                self.write_engine_small_background_ns, self.write_engine_small_extra_ns
            ));
        }
        if self.write_queue_reorder_ppm > 1_000_000 {
            return Err(format!(
                "timing.write_queue_reorder_ppm = {} must be at most 1000000 (100 %)",
                self.write_queue_reorder_ppm
            ));
        }
        if self.reset_jitter_ppm >= 1_000_000 {
            return Err(format!(
                "timing.reset_jitter_ppm = {} must be below 1000000 (100 %)",
                self.reset_jitter_ppm
            ));
        }
        if self.reset_interference_slowdown_pct < 100 {
            return Err(format!(
                "timing.reset_interference_slowdown_pct = {} must be at least 100",
                self.reset_interference_slowdown_pct
            ));
        }
        // Guard the integer arithmetic: no single time parameter above ~1 hour.
        const MAX_NS: u64 = 3_600_000_000_000;
        for (name, v) in self.time_fields() {
            if v > MAX_NS {
                return Err(format!("timing.{name} = {v} ns is larger than one hour"));
            }
        }
        if let Some(i) = self.read_page_ns.iter().position(|&v| v > MAX_NS) {
            return Err(format!("timing.read_page_ns[{i}] is larger than one hour"));
        }
        if self.reset_interference_slowdown_pct > 100_000 {
            return Err(format!(
                "timing.reset_interference_slowdown_pct = {} is larger than 100000",
                self.reset_interference_slowdown_pct
            ));
        }
        Ok(())
    }

    fn time_fields(&self) -> [(&'static str, u64); 47] {
        [
            ("host_spdk_submit_ns", self.host_spdk_submit_ns),
            ("host_spdk_complete_ns", self.host_spdk_complete_ns),
            (
                "host_io_uring_none_submit_ns",
                self.host_io_uring_none_submit_ns,
            ),
            (
                "host_io_uring_none_complete_ns",
                self.host_io_uring_none_complete_ns,
            ),
            (
                "host_io_uring_mq_deadline_submit_ns",
                self.host_io_uring_mq_deadline_submit_ns,
            ),
            (
                "host_io_uring_mq_deadline_complete_ns",
                self.host_io_uring_mq_deadline_complete_ns,
            ),
            (
                "host_io_uring_mq_deadline_read_submit_ns",
                self.host_io_uring_mq_deadline_read_submit_ns.unwrap_or(0),
            ),
            (
                "host_io_uring_mq_deadline_read_complete_ns",
                self.host_io_uring_mq_deadline_read_complete_ns.unwrap_or(0),
            ),
            ("host_libaio_submit_ns", self.host_libaio_submit_ns),
            (
                "host_mq_deadline_request_ns",
                self.host_mq_deadline_request_ns,
            ),
            (
                "host_mq_deadline_bio_complete_ns",
                self.host_mq_deadline_bio_complete_ns,
            ),
            ("frontend_ns", self.frontend_ns),
            ("write_engine_ns", self.write_engine_ns),
            (
                "write_engine_per_extra_unit_ns",
                self.write_engine_per_extra_unit_ns,
            ),
            (
                "write_engine_small_extra_ns",
                self.write_engine_small_extra_ns,
            ),
            (
                "write_engine_small_background_ns",
                self.write_engine_small_background_ns,
            ),
            ("write_complete_ns", self.write_complete_ns),
            (
                "implicit_open_write_extra_ns",
                self.implicit_open_write_extra_ns,
            ),
            ("append_engine_ns", self.append_engine_ns),
            (
                "append_engine_small_extra_ns",
                self.append_engine_small_extra_ns,
            ),
            (
                "append_engine_per_extra_unit_ns",
                self.append_engine_per_extra_unit_ns,
            ),
            ("append_complete_ns", self.append_complete_ns),
            (
                "implicit_open_append_extra_ns",
                self.implicit_open_append_extra_ns,
            ),
            ("read_controller_ns", self.read_controller_ns),
            ("read_complete_ns", self.read_complete_ns),
            ("read_flash_extra_ns", self.read_flash_extra_ns),
            ("flush_ns", self.flush_ns),
            ("program_ns", self.program_ns),
            ("erase_ns", self.erase_ns),
            (
                "program_suspend_granularity_ns",
                self.program_suspend_granularity_ns,
            ),
            ("program_suspend_ns", self.program_suspend_ns),
            ("program_resume_ns", self.program_resume_ns),
            ("open_ns", self.open_ns),
            ("close_ns", self.close_ns),
            ("zone_mgmt_noop_ns", self.zone_mgmt_noop_ns),
            ("reset_base_ns", self.reset_base_ns),
            ("reset_per_written_mib_ns", self.reset_per_written_mib_ns),
            ("reset_partial_extra_ns", self.reset_partial_extra_ns),
            ("reset_full_extra_ns", self.reset_full_extra_ns),
            (
                "reset_interference_window_ns",
                self.reset_interference_window_ns,
            ),
            ("finish_base_ns", self.finish_base_ns),
            ("finish_empty_ns", self.finish_empty_ns),
            ("zrwa_flush_ns", self.zrwa_flush_ns),
            ("conv_read_engine_ns", self.conv_read_engine_ns),
            ("conv_small_write_ns", self.conv_small_write_ns),
            ("conv_write_ns", self.conv_write_ns),
            ("readahead_hit_ns", self.readahead_hit_ns),
        ]
    }
}
