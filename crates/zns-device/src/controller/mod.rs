//! The emulated NVMe controller: namespaces (zoned and conventional) that share
//! one flash array, the data store of each namespace, the host stack in front of
//! them, and the fault model (power loss, failed device, read errors, zones
//! forced read-only or offline).
//!
//! A command runs in three steps: the ZNS state machine (`zns_core::ZoneSet`)
//! accepts it or names the NVMe status; the data store takes the data; the
//! timing model (`zns_sim::timing::FlashArray`) says when it completes, and the
//! command's future sleeps until then in virtual time. State changes are applied
//! at submission, as a controller that has accepted the command would.
//!
//! Power-loss model: every write that is not yet durable is kept in a log (its
//! LBA range, completion instant and FUA flag). A write is durable when it
//! completed with FUA, or completed before a Flush that completed. At a power
//! cut, each other write survives, vanishes or is torn (a prefix of its blocks
//! survives) as the profile's `PowerLossPolicy` and the seed decide. A zone's
//! write pointer after power-on is the end of the data that survived in order
//! from the zone start; blocks beyond it are deallocated. ZRWA contents are kept
//! or discarded per policy. Open zones come back Closed. On a conventional
//! namespace a lost or torn block reads back as zeros (the store keeps no undo
//! copy).
//!
//! Files: this module holds the controller, its state, construction (profiles,
//! images) and the admission of commands; `commands` the I/O commands' paths,
//! `faults` power cuts (and `PowerLog`, the log of writes not yet durable
//! they read), restarts and injected faults, `namespaces` the
//! namespace handles users open as devices.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use zns_core::{NvmeError, NvmeStatus, ZoneChange, ZoneSendCmd, ZoneSet, ZonedConfig};
use zns_sim::rng::SimRng;
use zns_sim::timing::{FlashArray, FtlPlace, HostStack, MediaOp, NamespaceKind};
use zns_sim::Handle;

use crate::ftl::{Ftl, FtlEffects, FtlStats, GcWork};
use crate::mqdeadline::ZoneWriteLocks;
use crate::profile::{ConventionalConfig, NamespaceProfile, Profile};
use crate::store::{DataStore, PersistentImage, StoreError, StoreKind};

mod commands;
mod faults;
mod namespaces;

use faults::PowerLog;
pub use namespaces::{EmulatedConventionalNs, EmulatedZns};

/// Why a device could not be built or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
}

/// A namespace's mutable state.
pub(crate) enum NsState {
    Zoned {
        zones: ZoneSet,
        store: Box<dyn DataStore>,
    },
    Conventional {
        config: ConventionalConfig,
        store: Box<dyn DataStore>,
        /// The page-mapped FTL of an SSD namespace (`[namespace.ftl]`).
        ftl: Option<Box<Ftl>>,
    },
}

impl NsState {
    fn store(&mut self) -> &mut dyn DataStore {
        match self {
            NsState::Zoned { store, .. } | NsState::Conventional { store, .. } => store.as_mut(),
        }
    }
    fn lba_bytes(&self) -> u32 {
        match self {
            NsState::Zoned { zones, .. } => zones.config().lba_bytes,
            NsState::Conventional { config, .. } => config.lba_bytes,
        }
    }
}

/// Counters of what the controller did (for reports and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ControllerStats {
    pub reads: u64,
    pub writes: u64,
    pub appends: u64,
    pub zone_mgmt: u64,
    pub flushes: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub power_cuts: u64,
}

/// An injected fault, as listed by `Controller::injected_faults`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum InjectedFault {
    PowerCut { at_ns: u64 },
    DeviceFailed { at_ns: u64 },
    ReadError { nsid: u32, lba: u64 },
    ZoneReadOnly { nsid: u32, zone: u32 },
    ZoneOffline { nsid: u32, zone: u32 },
}

struct State {
    powered: bool,
    failed: bool,
    /// Incremented at every power cut: commands submitted in an earlier epoch
    /// complete with "aborted due to power loss".
    epoch: u64,
    flash: FlashArray,
    namespaces: Vec<NsState>,
    /// Writes not durable yet, for a power cut.
    power_log: PowerLog,
    read_errors: BTreeSet<(u32, u64)>,
    faults: Vec<InjectedFault>,
    rng: SimRng,
    stats: ControllerStats,
    image: Option<PersistentImage>,
    /// Set when an image was opened from its older zone table because the
    /// newest one failed its checks (a save torn by a crash, or damage).
    metadata_recovery: Option<String>,
    /// Scratch buffers of FTL namespaces (reused, no allocation per command).
    ftl_fx: FtlEffects,
    ftl_places: Vec<FtlPlace>,
    /// Zeros for `write_untimed`'s data store writes.
    untimed_zeros: Vec<u8>,
}

pub(crate) struct Inner {
    handle: Handle,
    profile: Profile,
    host_stack: Cell<HostStack>,
    /// Reads of a namespace without a data store (`StoreKind::None`) zero
    /// the buffer (default) or leave it as it is (timing-only callers).
    zero_fill_reads: Cell<bool>,
    state: RefCell<State>,
    locks: ZoneWriteLocks,
    zoned_configs: Vec<Option<ZonedConfig>>,
}

impl Drop for Inner {
    /// Clean shutdown (the last handle goes away): like an NVMe shutdown
    /// notification, every completed write becomes durable — an image gets its
    /// data synced and its zone table saved. (A process killed with SIGKILL
    /// skips this: then only FUA writes and flushed data are guaranteed.)
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if !st.powered || st.failed {
            return;
        }
        let blob = encode_metadata(&st.namespaces);
        if let Some(image) = st.image.as_mut() {
            let _ = image.sync();
            let _ = image.save_metadata(&blob);
        }
    }
}

/// An emulated NVMe controller with one or more namespaces.
#[derive(Clone)]
pub struct Controller {
    inner: Rc<Inner>,
}

/// Options for building a controller.
#[derive(Debug, Clone, Copy)]
pub struct ControllerOptions {
    /// Where namespace data lives (None, Stamp or Memory; images use `Controller::open_image`).
    pub store: StoreKind,
    /// The host I/O stack the commands go through.
    pub host_stack: HostStack,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            store: StoreKind::None,
            host_stack: HostStack::Spdk,
        }
    }
}

impl Controller {
    /// A controller with in-memory (or no) data, all zones empty.
    pub fn new(
        handle: &Handle,
        profile: Profile,
        options: ControllerOptions,
    ) -> Result<Controller, DeviceError> {
        if options.store == StoreKind::Image {
            return Err(DeviceError::Invalid(
                "the image store needs a file: use Controller::create_image / open_image".into(),
            ));
        }
        let mut namespaces = Vec::new();
        for ns in &profile.namespaces {
            let store = crate::store::new_store(options.store, ns.lba_bytes(), ns.lba_count());
            namespaces.push(new_ns_state(ns, &profile.timing, store, None)?);
        }
        Controller::assemble(handle, profile, options.host_stack, namespaces, None)
    }

    /// Creates a persistent device image at `path` (refuses to overwrite a file).
    pub fn create_image(
        handle: &Handle,
        profile: Profile,
        path: &std::path::Path,
        host_stack: HostStack,
    ) -> Result<Controller, DeviceError> {
        refuse_ftl_in_image(&profile)?;
        let layout: Vec<(u32, u64)> = profile
            .namespaces
            .iter()
            .map(|n| (n.lba_bytes(), n.lba_count()))
            .collect();
        let image = PersistentImage::create(path, &profile.to_toml(), &layout)?;
        let mut namespaces = Vec::new();
        for (i, ns) in profile.namespaces.iter().enumerate() {
            namespaces.push(new_ns_state(
                ns,
                &profile.timing,
                image.namespace_store(i),
                None,
            )?);
        }
        let ctrl = Controller::assemble(handle, profile, host_stack, namespaces, Some(image))?;
        ctrl.persist_metadata().map_err(DeviceError::Store)?;
        Ok(ctrl)
    }

    /// Opens a persistent device image; the profile comes from the image. Zone
    /// states are what the image holds: zones that were open come back closed,
    /// as after a power cycle.
    pub fn open_image(
        handle: &Handle,
        path: &std::path::Path,
        host_stack: HostStack,
    ) -> Result<Controller, DeviceError> {
        let image = PersistentImage::open(path)?;
        let metadata_damage = image.damaged_metadata_slot()?;
        let profile = Profile::from_toml(
            image.profile_toml(),
            &format!("stored in {}", path.display()),
        )?;
        refuse_ftl_in_image(&profile)?;
        let records = match image.load_metadata()? {
            Some(blob) => Some(decode_metadata(&blob, &profile)?),
            None => None,
        };
        let mut namespaces = Vec::new();
        for (i, ns) in profile.namespaces.iter().enumerate() {
            let zone_records = records
                .as_ref()
                .and_then(|r| r.get(i))
                .map(|v| v.as_slice());
            namespaces.push(new_ns_state(
                ns,
                &profile.timing,
                image.namespace_store(i),
                zone_records,
            )?);
        }
        let ctrl = Controller::assemble(handle, profile, host_stack, namespaces, Some(image))?;
        // Power-on after whatever ended the last process: open zones become
        // closed. When the newest zone table was unreadable, data past the
        // older table's write pointers is kept (it may be what the damaged
        // table described) and the recovery is reported.
        let discard_past_wp = metadata_damage.is_none();
        ctrl.restore_after_restart(discard_past_wp)?;
        ctrl.inner.state.borrow_mut().metadata_recovery = metadata_damage;
        ctrl.persist_metadata().map_err(DeviceError::Store)?;
        Ok(ctrl)
    }

    fn assemble(
        handle: &Handle,
        profile: Profile,
        host_stack: HostStack,
        namespaces: Vec<NsState>,
        image: Option<PersistentImage>,
    ) -> Result<Controller, DeviceError> {
        let mut flash = FlashArray::new(&profile.timing)
            .map_err(|m| DeviceError::Invalid(format!("timing: {m}")))?;
        for (i, ns) in profile.namespaces.iter().enumerate() {
            let kind = match ns {
                NamespaceProfile::Zoned(_) => NamespaceKind::Zoned,
                NamespaceProfile::Conventional(_) => NamespaceKind::Conventional,
            };
            flash.declare_namespace(i as u32, kind);
        }
        let zoned_configs = profile
            .namespaces
            .iter()
            .map(|n| match n {
                NamespaceProfile::Zoned(z) => Some(z.clone()),
                NamespaceProfile::Conventional(_) => None,
            })
            .collect();
        let state = State {
            powered: true,
            failed: false,
            epoch: 0,
            flash,
            namespaces,
            power_log: PowerLog::new(),
            read_errors: BTreeSet::new(),
            faults: Vec::new(),
            rng: handle.rng(),
            stats: ControllerStats::default(),
            image,
            metadata_recovery: None,
            ftl_fx: FtlEffects::default(),
            ftl_places: Vec::new(),
            untimed_zeros: Vec::new(),
        };
        Ok(Controller {
            inner: Rc::new(Inner {
                handle: handle.clone(),
                profile,
                host_stack: Cell::new(host_stack),
                zero_fill_reads: Cell::new(true),
                state: RefCell::new(state),
                locks: ZoneWriteLocks::default(),
                zoned_configs,
            }),
        })
    }

    pub fn profile(&self) -> &Profile {
        &self.inner.profile
    }

    pub fn handle(&self) -> &Handle {
        &self.inner.handle
    }

    pub fn host_stack(&self) -> HostStack {
        self.inner.host_stack.get()
    }

    pub fn set_host_stack(&self, stack: HostStack) {
        self.inner.host_stack.set(stack);
    }

    /// With `false`, a read of a namespace that keeps no data
    /// (`StoreKind::None`) leaves the caller's buffer as it is instead of
    /// zeroing it: for callers that only want the timing and never look at
    /// what they read (the cache benchmark zeroed ~4 TB per simulated hour).
    /// Timing, state and every other store are unaffected. Default `true`.
    pub fn set_zero_fill_reads(&self, on: bool) {
        self.inner.zero_fill_reads.set(on);
    }

    pub fn namespace_count(&self) -> u32 {
        self.inner.profile.namespaces.len() as u32
    }

    /// The zoned namespace with this NSID (1-based), as a `ZonedDevice`.
    pub fn zoned(&self, nsid: u32) -> Option<EmulatedZns> {
        let index = nsid.checked_sub(1)? as usize;
        self.inner.zoned_configs.get(index)?.as_ref()?;
        Some(EmulatedZns {
            ctrl: self.clone(),
            ns: index as u32,
        })
    }

    /// The first zoned namespace.
    pub fn first_zoned(&self) -> Option<EmulatedZns> {
        let index = self.inner.profile.first_zoned()?;
        self.zoned(index as u32 + 1)
    }

    /// The conventional namespace with this NSID (1-based), as a `BlockDevice`.
    pub fn conventional(&self, nsid: u32) -> Option<EmulatedConventionalNs> {
        let index = nsid.checked_sub(1)? as usize;
        match self.inner.profile.namespaces.get(index)? {
            NamespaceProfile::Conventional(c) => Some(EmulatedConventionalNs {
                ctrl: self.clone(),
                ns: index as u32,
                config: c.clone(),
            }),
            NamespaceProfile::Zoned(_) => None,
        }
    }

    pub fn stats(&self) -> ControllerStats {
        self.inner.state.borrow().stats
    }

    /// FTL counters (host and flash bytes written — device WAF —, GC,
    /// erases, wear, map memory) of namespace `nsid` (1-based); None if it
    /// is not an FTL namespace.
    pub fn ftl_stats(&self, nsid: u32) -> Option<FtlStats> {
        let st = self.inner.state.borrow();
        match st.namespaces.get(nsid.checked_sub(1)? as usize)? {
            NsState::Conventional { ftl: Some(f), .. } => Some(f.stats()),
            _ => None,
        }
    }

    /// Erase count of every block of FTL namespace `nsid` (wear per block,
    /// die-major order); None if it is not an FTL namespace.
    pub fn ftl_block_erase_counts(&self, nsid: u32) -> Option<Vec<u32>> {
        let st = self.inner.state.borrow();
        match st.namespaces.get(nsid.checked_sub(1)? as usize)? {
            NsState::Conventional { ftl: Some(f), .. } => Some(f.block_erase_counts()),
            _ => None,
        }
    }

    /// Preconditioning: applies a write of `nlb` blocks at `slba` to
    /// conventional namespace `nsid` (1-based) without timing — the data
    /// store gets zeros, an FTL namespace's page map, invalidations and GC
    /// decisions are those of a timed write (`Ftl::write_untimed`), but no
    /// die, channel or controller time is used and the virtual clock does
    /// not move. The write is durable at once (nothing in the power-loss
    /// log) and not counted in the command statistics; the FTL counts its
    /// bytes. Errors as a write's: no such conventional namespace, LBA out
    /// of range (any length is accepted: no MDTS).
    pub fn write_untimed(&self, nsid: u32, slba: u64, nlb: u64) -> Result<(), NvmeError> {
        let mut guard = self.inner.state.borrow_mut();
        let st = &mut *guard;
        let ns = nsid.checked_sub(1).ok_or(NvmeStatus::InvalidNamespace)? as usize;
        let Some(NsState::Conventional { store, ftl, config }) = st.namespaces.get_mut(ns) else {
            return Err(NvmeStatus::InvalidNamespace.into());
        };
        match slba.checked_add(nlb) {
            Some(end) if nlb > 0 && end <= config.capacity_lbas => {}
            _ => return Err(NvmeStatus::LbaOutOfRange.into()),
        }
        let lba = u64::from(config.lba_bytes);
        let bytes = nlb * lba;
        if st.untimed_zeros.len() < bytes as usize {
            st.untimed_zeros.resize(bytes as usize, 0);
        }
        store
            .write(slba, &st.untimed_zeros[..bytes as usize])
            .map_err(store_status)?;
        if let Some(ftl) = ftl.as_mut() {
            ftl.write_untimed(slba * lba, bytes)
                .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        }
        Ok(())
    }

    /// Checks the page-map invariants of FTL namespace `nsid` (tests).
    pub fn ftl_check(&self, nsid: u32) -> Result<(), String> {
        let st = self.inner.state.borrow();
        match st.namespaces.get(nsid.saturating_sub(1) as usize) {
            Some(NsState::Conventional { ftl: Some(f), .. }) => f.check_consistency(),
            _ => Err(format!("namespace {nsid} has no FTL")),
        }
    }

    /// Virtual time (ns) at which all flash work scheduled so far (programs,
    /// finish filler, commits) has ended: from then on no written data is
    /// waiting in the write buffer.
    pub fn flash_idle_at_ns(&self) -> u64 {
        self.inner.state.borrow().flash.flash_idle_at()
    }

    /// Memory held by the data stores, in bytes.
    pub fn store_resident_bytes(&self) -> u64 {
        let st = self.inner.state.borrow();
        st.namespaces
            .iter()
            .map(|n| match n {
                NsState::Zoned { store, .. } | NsState::Conventional { store, .. } => {
                    store.resident_bytes()
                }
            })
            .sum()
    }

    /// If the image was opened from its older zone table because the newest
    /// failed its checks: what was wrong. Data past the recovered write
    /// pointers was left in place. Tools should show this to the user.
    pub fn metadata_recovery(&self) -> Option<String> {
        self.inner.state.borrow().metadata_recovery.clone()
    }

    pub fn is_powered(&self) -> bool {
        self.inner.state.borrow().powered
    }

    /// Every fault injected so far.
    pub fn injected_faults(&self) -> Vec<InjectedFault> {
        self.inner.state.borrow().faults.clone()
    }

    // ------------------------------------------------------------------ faults

    // --------------------------------------------------------------- internals

    /// Writes the zone table to the image (no-op without an image).
    fn persist_metadata(&self) -> Result<(), StoreError> {
        let mut st = self.inner.state.borrow_mut();
        let st = &mut *st;
        let Some(image) = st.image.as_mut() else {
            return Ok(());
        };
        let blob = encode_metadata(&st.namespaces);
        image.save_metadata(&blob)
    }

    /// FUA with a persistent image: the data and the zone table reach the file
    /// (and are synced) before the command completes.
    fn sync_image_for_fua(&self, fua: bool) -> Result<(), NvmeError> {
        if !fua {
            return Ok(());
        }
        {
            let mut st = self.inner.state.borrow_mut();
            match st.image.as_mut() {
                Some(image) => image.sync().map_err(store_status)?,
                None => return Ok(()),
            }
        }
        self.persist_metadata().map_err(store_status)
    }

    /// Common entry checks: power, failure. Returns the current epoch.
    fn admit(&self) -> Result<u64, NvmeError> {
        let st = self.inner.state.borrow();
        if st.failed {
            return Err(NvmeError::injected(NvmeStatus::HostPathingError));
        }
        if !st.powered {
            return Err(NvmeError::injected(NvmeStatus::NamespaceNotReady));
        }
        Ok(st.epoch)
    }

    /// Waits until `complete_ns`, then reports whether the command survived.
    async fn complete_at(&self, epoch: u64, complete_ns: u64) -> Result<(), NvmeError> {
        self.inner.handle.sleep_until(complete_ns).await;
        let st = self.inner.state.borrow();
        if st.failed {
            return Err(NvmeError::injected(NvmeStatus::HostPathingError));
        }
        if st.epoch != epoch {
            return Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss));
        }
        Ok(())
    }

    /// Runs a command; a rejection is counted and posted after a controller
    /// round trip (`reject`).
    async fn run<T>(
        &self,
        ns: u32,
        command: impl std::future::Future<Output = Result<T, NvmeError>>,
    ) -> Result<T, NvmeError> {
        match command.await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.reject(ns, e).await),
        }
    }

    /// A rejected command: counted, and (unless an injected fault made the
    /// device unreachable) completed after one controller round trip, as a
    /// real controller posts an error completion.
    async fn reject(&self, ns: u32, error: NvmeError) -> NvmeError {
        let done_ns = {
            let mut st = self.inner.state.borrow_mut();
            st.stats.errors += 1;
            if error.injected {
                return error;
            }
            let now_ns = self.inner.handle.now_ns();
            let stack = self.inner.host_stack.get();
            st.flash
                .submit(now_ns, stack, &MediaOp::ZoneMgmtNoop { ns, zone: 0 })
        };
        self.inner.handle.sleep_until(done_ns).await;
        error
    }

    fn lba_count(data_len: usize, lba_bytes: u32) -> Result<u64, NvmeError> {
        if data_len == 0 || data_len % lba_bytes as usize != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        Ok((data_len / lba_bytes as usize) as u64)
    }

    fn zoned_config(&self, ns: u32) -> &ZonedConfig {
        self.inner.zoned_configs[ns as usize]
            .as_ref()
            .expect("EmulatedZns is only built for zoned namespaces")
    }
}

fn check_conv_range(config: &ConventionalConfig, slba: u64, nlb: u64) -> Result<(), NvmeError> {
    if nlb > config.max_transfer_lbas as u64 {
        return Err(NvmeStatus::InvalidField.into());
    }
    match slba.checked_add(nlb) {
        Some(end) if end <= config.capacity_lbas => Ok(()),
        _ => Err(NvmeStatus::LbaOutOfRange.into()),
    }
}

fn store_status(e: StoreError) -> NvmeError {
    match e {
        StoreError::BadBlock { .. } => NvmeStatus::UnrecoveredReadError.into(),
        StoreError::Invalid(_) => NvmeStatus::InvalidField.into(),
        _ => NvmeStatus::InternalError.into(),
    }
}

/// The commit of a ZRWA's data a Finish makes (`change.committed`): the
/// data goes to the zone's flash ahead of the filler (ZoneChange's
/// `committed`: from the WP to the end of the highest ZRWA write).
fn finish_commit(
    ns: u32,
    change: &ZoneChange,
    cfg: &ZonedConfig,
    zone_start: u64,
) -> Option<MediaOp> {
    let lba_bytes = cfg.lba_bytes as u64;
    change.committed.map(|(from, to)| MediaOp::ZrwaCommit {
        ns,
        zone: change.zone,
        zone_offset_bytes: (from - zone_start) * lba_bytes,
        bytes: (to - from) * lba_bytes,
    })
}

fn media_op_for(
    ns: u32,
    cmd: ZoneSendCmd,
    change: &ZoneChange,
    cfg: &ZonedConfig,
    zone_start: u64,
) -> MediaOp {
    let lba_bytes = cfg.lba_bytes as u64;
    let zone = change.zone;
    if change.controller_initiated {
        // A zone the controller closed to free an open resource.
        return MediaOp::Close { ns, zone };
    }
    match cmd.action {
        zns_core::ZoneAction::Open { .. } => MediaOp::Open { ns, zone },
        zns_core::ZoneAction::Close | zns_core::ZoneAction::Offline => MediaOp::Close { ns, zone },
        // a ZRWA's data is committed by the Finish (`finish_commit`): the
        // filler starts above it, not at the write pointer
        zns_core::ZoneAction::Finish => MediaOp::Finish {
            ns,
            zone,
            written_bytes: change
                .committed
                .map_or(change.written_lbas, |(_, to)| to - zone_start)
                * lba_bytes,
            capacity_bytes: cfg.zone_capacity_lbas * lba_bytes,
        },
        zns_core::ZoneAction::Reset => MediaOp::Reset {
            ns,
            zone,
            written_bytes: change.written_lbas * lba_bytes,
            finished_early: change.finished_early,
        },
        zns_core::ZoneAction::FlushZrwa => {
            let (from, to) = change.committed.unwrap_or((zone_start, zone_start));
            MediaOp::ZrwaFlush {
                ns,
                zone,
                zone_offset_bytes: (from - zone_start) * lba_bytes,
                bytes: (to - from) * lba_bytes,
            }
        }
    }
}

fn new_ns_state(
    ns: &NamespaceProfile,
    timing: &zns_sim::timing::TimingProfile,
    store: Box<dyn DataStore>,
    records: Option<&[zns_core::ZoneRecord]>,
) -> Result<NsState, DeviceError> {
    Ok(match ns {
        NamespaceProfile::Zoned(cfg) => {
            let zones = match records {
                Some(r) => ZoneSet::from_snapshot(cfg.clone(), r),
                None => ZoneSet::new(cfg.clone()),
            }
            .map_err(|e| DeviceError::Invalid(e.to_string()))?;
            NsState::Zoned { zones, store }
        }
        NamespaceProfile::Conventional(c) => {
            let ftl = c
                .ftl_geometry(timing)
                .map_err(DeviceError::Invalid)?
                .zip(c.ftl.as_ref())
                .map(|(geo, cfg)| Box::new(Ftl::new(cfg, geo)));
            NsState::Conventional {
                config: c.clone(),
                store,
                ftl,
            }
        }
    })
}

/// The zone tables of all namespaces as JSON (stored in the image's metadata slots).
/// Submits FTL garbage collection work to the timing model at `t_ns`: each
/// die's relocation (and SLC folding, whose SLC reads take `slc_read_ns`
/// each), then its erases (background: no host overhead).
pub(super) fn submit_gc(
    flash: &mut FlashArray,
    t_ns: u64,
    stack: HostStack,
    ns: u32,
    gc: &[GcWork],
    slc_read_ns: u64,
) {
    for g in gc {
        let op = MediaOp::GcRelocate {
            ns,
            die: g.die,
            read_units: g.read_units,
            bytes: g.bytes,
            program_units: g.program_units,
            slc_read_units: g.slc_read_units,
            slc_read_ns,
        };
        flash.submit(t_ns, stack, &op);
        for _ in 0..g.erases {
            flash.submit(t_ns, stack, &MediaOp::Erase { ns, die: g.die });
        }
    }
}

/// Device images do not store an FTL's page map (docs/ftl.md): a reopened
/// image would come back with an empty map — data without placement, GC
/// state and counters — so an image of a profile with an FTL namespace is
/// refused instead of silently losing that state.
fn refuse_ftl_in_image(profile: &Profile) -> Result<(), DeviceError> {
    for (i, ns) in profile.namespaces.iter().enumerate() {
        if matches!(ns, NamespaceProfile::Conventional(c) if c.ftl.is_some()) {
            return Err(DeviceError::Invalid(format!(
                "profile {}: namespace {} is an SSD with an FTL ([namespace.ftl]); device images do not \
                 store the FTL's page map yet, so it cannot be kept in an image: use the none, stamp or \
                 memory store",
                profile.name,
                i + 1
            )));
        }
    }
    Ok(())
}

fn encode_metadata(namespaces: &[NsState]) -> Vec<u8> {
    let tables: Vec<Vec<zns_core::ZoneRecord>> = namespaces
        .iter()
        .map(|n| match n {
            NsState::Zoned { zones, .. } => zones.snapshot(),
            NsState::Conventional { .. } => Vec::new(),
        })
        .collect();
    serde_json::to_vec(&tables).expect("zone records always serialize")
}

fn decode_metadata(
    blob: &[u8],
    profile: &Profile,
) -> Result<Vec<Vec<zns_core::ZoneRecord>>, DeviceError> {
    let tables: Vec<Vec<zns_core::ZoneRecord>> = serde_json::from_slice(blob)
        .map_err(|e| StoreError::Corrupt(format!("zone table: {e}")))?;
    if tables.len() != profile.namespaces.len() {
        return Err(StoreError::Corrupt(format!(
            "zone table has {} namespaces, the profile {}",
            tables.len(),
            profile.namespaces.len()
        ))
        .into());
    }
    Ok(tables)
}

// ------------------------------------------------------------ device handles
