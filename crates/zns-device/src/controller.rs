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

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use rand::Rng;
use zns_core::{
    CmdFuture, IoFlags, MgmtEffect, NvmeError, NvmeStatus, ReportFilter, ZoneChange,
    ZoneDescriptor, ZoneSendCmd, ZoneSet, ZoneState, ZonedConfig,
};
use zns_sim::rng::SimRng;
use zns_sim::timing::{FlashArray, FtlPlace, HostStack, MediaOp, NamespaceKind};
use zns_sim::Handle;

use crate::ftl::{Ftl, FtlEffects, FtlStats, GcWork};
use crate::mqdeadline::ZoneWriteLocks;
use crate::profile::{
    CompletedWritePolicy, ConventionalConfig, InFlightWritePolicy, NamespaceProfile, Profile,
    ZrwaPowerPolicy,
};
use crate::store::{DataStore, PersistentImage, StoreError, StoreKind};

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

/// A write that is not durable yet.
#[derive(Debug, Clone, Copy)]
struct PendingWrite {
    ns: u32,
    slba: u64,
    nlb: u64,
    complete_ns: u64,
    fua: bool,
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
    pending: VecDeque<PendingWrite>,
    pending_retain_at_len: usize,
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
            pending: VecDeque::new(),
            pending_retain_at_len: 1024,
            read_errors: BTreeSet::new(),
            faults: Vec::new(),
            rng: handle.rng(),
            stats: ControllerStats::default(),
            image,
            metadata_recovery: None,
            ftl_fx: FtlEffects::default(),
            ftl_places: Vec::new(),
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

    /// Cuts power now. Commands in flight complete with "aborted due to power
    /// loss"; writes that were not durable survive, vanish or are torn per the
    /// profile's policy and the seed; zone write pointers become what the medium
    /// holds. Until `power_on`, every command fails with Namespace Not Ready.
    pub fn power_cut(&self) {
        let now_ns = self.inner.handle.now_ns();
        let policy = self.inner.profile.power_loss;
        let mut guard = self.inner.state.borrow_mut();
        let st = &mut *guard;
        if !st.powered {
            return;
        }
        st.powered = false;
        st.epoch += 1;
        st.stats.power_cuts += 1;
        st.faults.push(InjectedFault::PowerCut { at_ns: now_ns });

        // Decide the fate of every non-durable write: how many of its blocks reach the medium.
        let mut lost: Vec<(u32, u64, u64)> = Vec::new(); // (ns, first lost lba, end)
        let durable_end = fua_durable_ends(st, now_ns);
        let pending: Vec<PendingWrite> = st.pending.drain(..).collect();
        for w in pending {
            let completed = w.complete_ns <= now_ns;
            if completed && w.fua {
                continue;
            }
            let covered = zone_of_write(&st.namespaces, &w)
                .and_then(|z| durable_end.get(&(w.ns, z)))
                .is_some_and(|&end| w.slba + w.nlb <= end);
            if covered {
                continue;
            }
            let kept_blocks = if completed {
                match policy.completed_unflushed {
                    CompletedWritePolicy::Keep => w.nlb,
                    CompletedWritePolicy::Drop => 0,
                    CompletedWritePolicy::Random => random_fate(&mut st.rng, w.nlb),
                }
            } else {
                match policy.in_flight {
                    InFlightWritePolicy::Drop => 0,
                    InFlightWritePolicy::Torn => st.rng.gen_range(0..w.nlb.max(1)).min(w.nlb),
                    InFlightWritePolicy::Random => random_fate(&mut st.rng, w.nlb),
                }
            };
            if kept_blocks < w.nlb {
                lost.push((w.ns, w.slba + kept_blocks, w.slba + w.nlb));
            }
        }

        let keep_zrwa = policy.zrwa == ZrwaPowerPolicy::Keep;
        for (ns_index, ns) in st.namespaces.iter_mut().enumerate() {
            let ns_lost: Vec<(u64, u64)> = lost
                .iter()
                .filter(|(n, _, _)| *n as usize == ns_index)
                .map(|&(_, a, b)| (a, b))
                .collect();
            match ns {
                NsState::Conventional { store, ftl, config } => {
                    let lba = u64::from(config.lba_bytes);
                    for (a, b) in ns_lost {
                        let _ = store.deallocate(a, b - a);
                        if let Some(ftl) = ftl.as_mut() {
                            ftl.trim(a * lba, (b - a) * lba);
                        }
                    }
                }
                NsState::Zoned { zones, store } => {
                    let cfg = zones.config().clone();
                    // Durable WP of each zone: below the first lost block.
                    let mut first_lost: HashMap<u32, u64> = HashMap::new();
                    for &(a, _) in &ns_lost {
                        if let Some(z) = zones.zone_of(a) {
                            let e = first_lost.entry(z).or_insert(a);
                            *e = (*e).min(a);
                        }
                    }
                    let before: Vec<ZoneDescriptor> = (0..cfg.zone_count)
                        .filter_map(|z| zones.descriptor(z))
                        .collect();
                    let durable = |z: u32| -> u64 {
                        let wp = before[z as usize].write_pointer;
                        first_lost.get(&z).map_or(wp, |&l| l.min(wp))
                    };
                    zones.power_cycle(&durable, keep_zrwa);
                    // Deallocate what no longer stands: lost blocks, and (ZRWA
                    // discarded) everything above the new WP in formerly active zones.
                    for (a, b) in &ns_lost {
                        let _ = store.deallocate(*a, b - a);
                    }
                    for (z, old) in before.iter().enumerate() {
                        let Some(new) = zones.descriptor(z as u32) else {
                            continue;
                        };
                        if new.write_pointer < old.write_pointer && new.state != ZoneState::Full {
                            let _ = store.deallocate(
                                new.write_pointer,
                                old.write_pointer - new.write_pointer,
                            );
                        }
                        if !keep_zrwa && old.attributes.zrwa_valid {
                            if let Some(zrwa) = &cfg.zrwa {
                                let zone_end = old.start_lba + cfg.zone_capacity_lbas;
                                let end = (new.write_pointer + 2 * zrwa.size_lbas).min(zone_end);
                                if end > new.write_pointer {
                                    let _ = store
                                        .deallocate(new.write_pointer, end - new.write_pointer);
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(guard);
        self.inner
            .locks
            .abort_waiting(Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss)));
        let _ = self.persist_metadata();
    }

    /// Restores power after `power_cut`.
    pub fn power_on(&self) {
        self.inner.state.borrow_mut().powered = true;
    }

    /// Fails the whole device: every command from now on (and every command in
    /// flight) fails with Host Pathing Error, marked injected.
    pub fn fail(&self) {
        let now_ns = self.inner.handle.now_ns();
        let mut st = self.inner.state.borrow_mut();
        st.failed = true;
        st.faults
            .push(InjectedFault::DeviceFailed { at_ns: now_ns });
    }

    /// Reads covering `lba` of namespace `nsid` fail with Unrecovered Read Error.
    pub fn inject_read_error(&self, nsid: u32, lba: u64) -> Result<(), NvmeError> {
        if nsid == 0 || nsid > self.namespace_count() {
            return Err(NvmeStatus::InvalidNamespace.into());
        }
        let mut st = self.inner.state.borrow_mut();
        st.read_errors.insert((nsid.saturating_sub(1), lba));
        st.faults.push(InjectedFault::ReadError { nsid, lba });
        Ok(())
    }

    /// Forces a zone read-only (a controller-initiated transition to ZSRO).
    pub fn inject_zone_read_only(&self, nsid: u32, zone: u32) -> Result<(), NvmeError> {
        self.inject_zone_fault(nsid, zone, false)
    }

    /// Forces a zone offline (ZSO).
    pub fn inject_zone_offline(&self, nsid: u32, zone: u32) -> Result<(), NvmeError> {
        self.inject_zone_fault(nsid, zone, true)
    }

    fn inject_zone_fault(&self, nsid: u32, zone: u32, offline: bool) -> Result<(), NvmeError> {
        {
            let mut st = self.inner.state.borrow_mut();
            let ns = st
                .namespaces
                .get_mut(nsid.wrapping_sub(1) as usize)
                .ok_or(NvmeError::from(NvmeStatus::InvalidNamespace))?;
            let NsState::Zoned { zones, .. } = ns else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            if offline {
                zones.inject_offline(zone)?;
            } else {
                zones.inject_read_only(zone)?;
            }
            st.faults.push(if offline {
                InjectedFault::ZoneOffline { nsid, zone }
            } else {
                InjectedFault::ZoneReadOnly { nsid, zone }
            });
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        Ok(())
    }

    // --------------------------------------------------------------- internals

    /// Power-on of an image after the last process ended (cleanly or not):
    /// open zones become closed, and data past a zone's write pointer (and
    /// past its ZRWA, if it holds one) — written after the last saved zone
    /// table — is deallocated, so nothing beyond the WP is claimed.
    fn restore_after_restart(&self, discard_past_wp: bool) -> Result<(), StoreError> {
        let mut st = self.inner.state.borrow_mut();
        for ns in st.namespaces.iter_mut() {
            if let NsState::Zoned { zones, store } = ns {
                let cfg = zones.config().clone();
                let wps: Vec<u64> = (0..cfg.zone_count)
                    .map(|z| zones.descriptor(z).map_or(0, |d| d.write_pointer))
                    .collect();
                zones.power_cycle(&|z| wps[z as usize], true);
                if !discard_past_wp {
                    continue;
                }
                for z in 0..cfg.zone_count {
                    let Some(d) = zones.descriptor(z) else {
                        continue;
                    };
                    if !matches!(d.state, ZoneState::Empty | ZoneState::Closed) {
                        continue;
                    }
                    let zrwa_lbas = match (&cfg.zrwa, d.attributes.zrwa_valid) {
                        (Some(w), true) => 2 * w.size_lbas,
                        _ => 0,
                    };
                    let zone_end = d.start_lba + cfg.zone_size_lbas;
                    let keep_end = (d.write_pointer + zrwa_lbas).min(zone_end);
                    if keep_end < zone_end {
                        store.deallocate(keep_end, zone_end - keep_end)?;
                    }
                }
            }
        }
        Ok(())
    }

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

    /// Accepts a write (or a merged group of writes) to a zoned namespace:
    /// state machine, data store, timing, power-loss log. Returns the
    /// completion instant.
    fn dispatch_zoned_write(
        &self,
        ns: u32,
        slba: u64,
        nlb: u64,
        data: Option<&[u8]>,
        fua: bool,
    ) -> Result<u64, NvmeError> {
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let mut guard = self.inner.state.borrow_mut();
        let st = &mut *guard;
        let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
            return Err(NvmeStatus::InvalidNamespace.into());
        };
        let effect = zones.write(slba, nlb)?;
        let lba_bytes = zones.config().lba_bytes as u64;
        let zone_start = zones.zone_start_lba(effect.zone);
        if let Some(data) = data {
            store.write(slba, data).map_err(store_status)?;
        }
        let mut done_ns = st.flash.submit(
            now_ns,
            stack,
            &MediaOp::Write {
                ns,
                zone: effect.zone,
                zone_offset_bytes: (slba - zone_start) * lba_bytes,
                bytes: nlb * lba_bytes,
                implicit_open: effect.implicitly_opened,
                zrwa: effect.zrwa,
                fua,
            },
        );
        if let Some(closed) = effect.auto_closed {
            done_ns = done_ns.max(st.flash.submit(
                now_ns,
                stack,
                &MediaOp::Close { ns, zone: closed },
            ));
        }
        if let Some((from, to)) = effect.committed {
            st.flash.submit(
                now_ns,
                stack,
                &MediaOp::ZrwaCommit {
                    ns,
                    zone: effect.zone,
                    zone_offset_bytes: (from - zone_start) * lba_bytes,
                    bytes: (to - from) * lba_bytes,
                },
            );
        }
        st.stats.writes += 1;
        st.stats.bytes_written += nlb * lba_bytes;
        log_pending(
            st,
            PendingWrite {
                ns,
                slba,
                nlb,
                complete_ns: done_ns,
                fua,
            },
            now_ns,
            self.inner.profile.power_loss.completed_unflushed,
        );
        Ok(done_ns)
    }

    async fn zoned_write(
        &self,
        ns: u32,
        slba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let cfg = self.zoned_config(ns);
        let nlb = Self::lba_count(data.len(), cfg.lba_bytes)?;
        if nlb > cfg.max_transfer_lbas as u64 {
            // Checked first on every stack, as the controller would.
            return Err(NvmeStatus::InvalidField.into());
        }
        if self.inner.host_stack.get() == HostStack::IoUringMqDeadline {
            // mq-deadline: one write per zone in flight; queued contiguous writes
            // are merged into one device command when the zone lock frees up.
            let zone = match slba.checked_div(cfg.zone_size_lbas) {
                Some(z) if slba < cfg.total_lbas() => z as u32,
                _ => return Err(NvmeStatus::LbaOutOfRange.into()),
            };
            let max_merge_lbas = cfg.max_transfer_lbas as u64;
            let ticket = self
                .inner
                .locks
                .acquire(ns, zone, slba, nlb, flags.fua, max_merge_lbas)
                .await;
            let outcome = match ticket.role() {
                crate::mqdeadline::Role::Leader { total_nlb, fua } => {
                    // The device may have lost power while this write waited.
                    let r = match self.admit() {
                        Ok(now_epoch) if now_epoch == epoch => {
                            self.dispatch_zoned_write(ns, slba, total_nlb, None, fua)
                        }
                        Ok(_) => Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss)),
                        Err(e) => Err(e),
                    };
                    ticket.publish(r);
                    r
                }
                crate::mqdeadline::Role::Follower(r) => r,
            };
            let result = match outcome {
                Ok(done_ns) => {
                    let stored = {
                        let mut st = self.inner.state.borrow_mut();
                        st.namespaces[ns as usize]
                            .store()
                            .write(slba, data)
                            .map_err(store_status)
                    };
                    let r = match stored.and_then(|()| self.sync_image_for_fua(flags.fua)) {
                        Ok(()) => self.complete_at(epoch, done_ns).await,
                        Err(e) => Err(e),
                    };
                    drop(ticket);
                    r
                }
                Err(e) => Err(e),
            };
            return result;
        }
        let done_ns = self.dispatch_zoned_write(ns, slba, nlb, Some(data), flags.fua)?;
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await
    }

    async fn zoned_append(
        &self,
        ns: u32,
        zslba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<u64, NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        let lba;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            let lba_bytes = zones.config().lba_bytes;
            let nlb = Self::lba_count(data.len(), lba_bytes)?;
            let effect = zones.append(zslba, nlb)?;
            lba = effect.slba;
            store.write(lba, data).map_err(store_status)?;
            let zone_start = zones.zone_start_lba(effect.zone);
            let mut t = st.flash.submit(
                now_ns,
                stack,
                &MediaOp::Append {
                    ns,
                    zone: effect.zone,
                    zone_offset_bytes: (lba - zone_start) * lba_bytes as u64,
                    bytes: nlb * lba_bytes as u64,
                    implicit_open: effect.implicitly_opened,
                    fua: flags.fua,
                },
            );
            if let Some(closed) = effect.auto_closed {
                t = t.max(
                    st.flash
                        .submit(now_ns, stack, &MediaOp::Close { ns, zone: closed }),
                );
            }
            done_ns = t;
            st.stats.appends += 1;
            st.stats.bytes_written += nlb * lba_bytes as u64;
            log_pending(
                st,
                PendingWrite {
                    ns,
                    slba: lba,
                    nlb,
                    complete_ns: done_ns,
                    fua: flags.fua,
                },
                now_ns,
                self.inner.profile.power_loss.completed_unflushed,
            );
        }
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await?;
        Ok(lba)
    }

    async fn read_ns(&self, ns: u32, slba: u64, buf: &mut [u8]) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let state = &mut st.namespaces[ns as usize];
            let lba_bytes = state.lba_bytes();
            let nlb = Self::lba_count(buf.len(), lba_bytes)?;
            match state {
                NsState::Zoned { zones, .. } => {
                    if nlb > zones.config().max_transfer_lbas as u64 {
                        return Err(NvmeStatus::InvalidField.into());
                    }
                    zones.check_read(slba, nlb)?
                }
                NsState::Conventional { config, .. } => check_conv_range(config, slba, nlb)?,
            }
            if st
                .read_errors
                .range((ns, slba)..(ns, slba + nlb))
                .next()
                .is_some()
            {
                return Err(NvmeError::injected(NvmeStatus::UnrecoveredReadError));
            }
            let store = st.namespaces[ns as usize].store();
            // The range was checked above; a store-less read only zeroes.
            if self.inner.zero_fill_reads.get() || store.kind() != StoreKind::None {
                store.read(slba, buf).map_err(store_status)?;
            }
            let off = slba * lba_bytes as u64;
            let bytes = buf.len() as u64;
            done_ns = match &mut st.namespaces[ns as usize] {
                NsState::Conventional { ftl: Some(ftl), .. } => {
                    ftl.places(off, bytes, &mut st.ftl_places);
                    let t = st
                        .flash
                        .submit_ftl_read(now_ns, stack, ns, off, bytes, &st.ftl_places);
                    ftl.note_done(t);
                    t
                }
                _ => st.flash.submit(
                    now_ns,
                    stack,
                    &MediaOp::Read {
                        ns,
                        lba_offset_bytes: off,
                        bytes,
                    },
                ),
            };
            st.stats.reads += 1;
            st.stats.bytes_read += buf.len() as u64;
        }
        self.complete_at(epoch, done_ns).await
    }

    async fn zone_send_ns(&self, ns: u32, cmd: ZoneSendCmd) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns;
        {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let NsState::Zoned { zones, store } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            let cfg = zones.config().clone();
            let effect: MgmtEffect = zones.zone_send(cmd)?;
            let mut t = now_ns;
            if effect.changes.is_empty() {
                // A valid command that changed nothing still costs a round trip.
                let zone = zones.zone_of(cmd.slba).unwrap_or(0);
                t = t.max(
                    st.flash
                        .submit(now_ns, stack, &MediaOp::ZoneMgmtNoop { ns, zone }),
                );
            }
            for change in &effect.changes {
                let op = media_op_for(ns, cmd, change, &cfg, zones.zone_start_lba(change.zone));
                t = t.max(st.flash.submit(now_ns, stack, &op));
                if cmd.action == zns_core::ZoneAction::Reset && change.to == ZoneState::Empty {
                    let start = zones.zone_start_lba(change.zone);
                    let _ = store.deallocate(start, cfg.zone_size_lbas);
                    st.pending.retain(|w| {
                        w.ns != ns || w.slba < start || w.slba >= start + cfg.zone_size_lbas
                    });
                }
            }
            done_ns = t;
            st.stats.zone_mgmt += 1;
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        self.complete_at(epoch, done_ns).await
    }

    async fn flush_all(&self, ns: u32) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let submit_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let done_ns = {
            let mut st = self.inner.state.borrow_mut();
            st.stats.flushes += 1;
            st.flash.submit(submit_ns, stack, &MediaOp::Flush { ns })
        };
        {
            let mut st = self.inner.state.borrow_mut();
            if let Some(image) = st.image.as_mut() {
                image.sync().map_err(store_status)?;
            }
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        self.complete_at(epoch, done_ns).await?;
        // Everything completed before the flush was submitted is now durable.
        let mut st = self.inner.state.borrow_mut();
        st.pending.retain(|w| w.complete_ns > submit_ns);
        Ok(())
    }

    async fn conv_write(
        &self,
        ns: u32,
        config: &ConventionalConfig,
        slba: u64,
        data: &[u8],
        flags: IoFlags,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        let nlb = Self::lba_count(data.len(), config.lba_bytes)?;
        check_conv_range(config, slba, nlb)?;
        let done_ns = {
            let mut guard = self.inner.state.borrow_mut();
            let st = &mut *guard;
            let off = slba * config.lba_bytes as u64;
            let bytes = data.len() as u64;
            let NsState::Conventional { store, ftl, .. } = &mut st.namespaces[ns as usize] else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            store.write(slba, data).map_err(store_status)?;
            let t = match ftl.as_mut() {
                None => st.flash.submit(
                    now_ns,
                    stack,
                    &MediaOp::ConvWrite {
                        ns,
                        lba_offset_bytes: off,
                        bytes,
                        fua: flags.fua,
                    },
                ),
                Some(ftl) => {
                    let fx = &mut st.ftl_fx;
                    fx.clear();
                    fx.load.program_ns = st.flash.profile().program_ns;
                    fx.load.unit_read_ns = st.flash.unit_read_ns();
                    fx.load.erase_ns = st.flash.profile().erase_ns;
                    let slc = ftl.config().slc_cache.as_ref();
                    fx.load.slc_program_ns = slc.map_or(0, |c| c.program_ns);
                    fx.load.slc_read_ns = slc.map_or(0, |c| c.read_ns);
                    let slc_read_ns = fx.load.slc_read_ns;
                    // Background GC in the idle time before this write.
                    if let Some(t0) = ftl.idle_gc(now_ns, &fx.load, &mut fx.gc) {
                        submit_gc(&mut st.flash, t0, stack, ns, &fx.gc, slc_read_ns);
                        fx.clear();
                    }
                    // The frontier steers units to the least busy dies.
                    let n = st.flash.dies();
                    fx.load.until_ns.clear();
                    fx.load
                        .until_ns
                        .extend((0..n).map(|d| st.flash.die_program_until(d).max(now_ns)));
                    ftl.write(off, bytes, fx)
                        .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
                    // GC the write triggered runs first on its dies.
                    submit_gc(&mut st.flash, now_ns, stack, ns, &fx.gc, slc_read_ns);
                    let t = st
                        .flash
                        .submit_ftl_write(now_ns, stack, ns, off, bytes, flags.fua, &fx.units);
                    ftl.note_done(t);
                    t
                }
            };
            st.stats.writes += 1;
            st.stats.bytes_written += data.len() as u64;
            log_pending(
                st,
                PendingWrite {
                    ns,
                    slba,
                    nlb,
                    complete_ns: t,
                    fua: flags.fua,
                },
                now_ns,
                self.inner.profile.power_loss.completed_unflushed,
            );
            t
        };
        self.sync_image_for_fua(flags.fua)?;
        self.complete_at(epoch, done_ns).await
    }

    async fn conv_discard(
        &self,
        ns: u32,
        config: &ConventionalConfig,
        slba: u64,
        nlb: u64,
    ) -> Result<(), NvmeError> {
        let epoch = self.admit()?;
        let now_ns = self.inner.handle.now_ns();
        let stack = self.inner.host_stack.get();
        if nlb == 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        // Deallocate is not limited by MDTS: only the range matters.
        if slba
            .checked_add(nlb)
            .map_or(true, |end| end > config.capacity_lbas)
        {
            return Err(NvmeStatus::LbaOutOfRange.into());
        }
        let done_ns = {
            let mut st = self.inner.state.borrow_mut();
            let lba = u64::from(config.lba_bytes);
            if let NsState::Conventional { store, ftl, .. } = &mut st.namespaces[ns as usize] {
                store.deallocate(slba, nlb).map_err(store_status)?;
                if let Some(ftl) = ftl.as_mut() {
                    ftl.trim(slba * lba, nlb * lba);
                }
            }
            // A deallocate costs a metadata update, like a flush of the mapping.
            st.flash.submit(now_ns, stack, &MediaOp::Flush { ns })
        };
        self.complete_at(epoch, done_ns).await
    }

    fn zoned_config(&self, ns: u32) -> &ZonedConfig {
        self.inner.zoned_configs[ns as usize]
            .as_ref()
            .expect("EmulatedZns is only built for zoned namespaces")
    }

    fn report(
        &self,
        ns: u32,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> Result<Vec<ZoneDescriptor>, NvmeError> {
        self.admit()?;
        let st = self.inner.state.borrow();
        let NsState::Zoned { zones, .. } = &st.namespaces[ns as usize] else {
            return Err(NvmeStatus::InvalidNamespace.into());
        };
        Ok(zones.report(start_lba, filter, max_zones)?)
    }
}

fn random_fate(rng: &mut SimRng, nlb: u64) -> u64 {
    match rng.gen_range(0..3u32) {
        0 => nlb,
        1 => 0,
        _ => rng.gen_range(0..nlb.max(1)),
    }
}

fn log_pending(
    st: &mut State,
    w: PendingWrite,
    now_ns: u64,
    completed_policy: CompletedWritePolicy,
) {
    // Completed writes that can no longer be lost need no log entry.
    let settled = |p: &PendingWrite| {
        p.complete_ns <= now_ns && (p.fua || completed_policy == CompletedWritePolicy::Keep)
    };
    while st.pending.front().is_some_and(settled) {
        st.pending.pop_front();
    }
    st.pending.push_back(w);
    if st.pending.len() >= st.pending_retain_at_len {
        // Also drop writes made durable by a later completed FUA write to the same zone.
        let durable_end = fua_durable_ends(st, now_ns);
        let namespaces = &st.namespaces;
        st.pending.retain(|p| {
            if settled(p) {
                return false;
            }
            match zone_of_write(namespaces, p).and_then(|z| durable_end.get(&(p.ns, z))) {
                Some(&end) => p.slba + p.nlb > end,
                None => true,
            }
        });
        st.pending_retain_at_len = (st.pending.len() * 2).max(1024);
    }
}

/// Per (namespace, zone): the end LBA of the furthest FUA write completed by
/// `now_ns`. A zone's medium is written in order, so everything before it in the
/// zone is durable too — except in a zone holding a ZRWA, whose writes land in
/// any order inside the window: there a FUA write makes only its own data
/// durable.
fn fua_durable_ends(st: &State, now_ns: u64) -> HashMap<(u32, u32), u64> {
    let mut durable_end: HashMap<(u32, u32), u64> = HashMap::new();
    for w in st
        .pending
        .iter()
        .filter(|w| w.fua && w.complete_ns <= now_ns)
    {
        if let Some(z) = zone_of_write(&st.namespaces, w).filter(|&z| !zone_has_zrwa(st, w.ns, z)) {
            let e = durable_end.entry((w.ns, z)).or_insert(0);
            *e = (*e).max(w.slba + w.nlb);
        }
    }
    durable_end
}

/// A ZRWA is allocated to the zone now.
fn zone_has_zrwa(st: &State, ns: u32, zone: u32) -> bool {
    match &st.namespaces[ns as usize] {
        NsState::Zoned { zones, .. } => zones
            .descriptor(zone)
            .is_some_and(|d| d.attributes.zrwa_valid),
        NsState::Conventional { .. } => false,
    }
}

/// The zone a pending write went to (None on a conventional namespace).
fn zone_of_write(namespaces: &[NsState], w: &PendingWrite) -> Option<u32> {
    match &namespaces[w.ns as usize] {
        NsState::Zoned { zones, .. } => zones.zone_of(w.slba),
        NsState::Conventional { .. } => None,
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
        zns_core::ZoneAction::Finish => MediaOp::Finish {
            ns,
            zone,
            written_bytes: change.written_lbas * lba_bytes,
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
fn submit_gc(
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

/// A zoned namespace of an emulated controller: the `ZonedDevice` users open.
#[derive(Clone)]
pub struct EmulatedZns {
    ctrl: Controller,
    ns: u32,
}

impl EmulatedZns {
    /// A one-namespace device from a built-in profile name, with no data store.
    pub fn from_profile(
        handle: &Handle,
        profile: Profile,
        options: ControllerOptions,
    ) -> Result<EmulatedZns, DeviceError> {
        let ctrl = Controller::new(handle, profile, options)?;
        ctrl.first_zoned()
            .ok_or_else(|| DeviceError::Invalid("the profile has no zoned namespace".into()))
    }

    pub fn controller(&self) -> &Controller {
        &self.ctrl
    }

    /// NSID (1-based).
    pub fn nsid(&self) -> u32 {
        self.ns + 1
    }
}

impl zns_core::ZonedDevice for EmulatedZns {
    fn config(&self) -> &ZonedConfig {
        self.ctrl.zoned_config(self.ns)
    }

    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        Box::pin(async move { self.ctrl.report(self.ns, start_lba, filter, max_zones) })
    }

    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.read_ns(self.ns, slba, buf)),
        )
    }

    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.zoned_write(self.ns, slba, data, flags)),
        )
    }

    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.zoned_append(self.ns, zslba, data, flags)),
        )
    }

    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.zone_send_ns(self.ns, cmd)))
    }

    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.flush_all(self.ns)))
    }
}

/// A conventional namespace of an emulated controller: a `BlockDevice`.
#[derive(Clone)]
pub struct EmulatedConventionalNs {
    ctrl: Controller,
    ns: u32,
    config: ConventionalConfig,
}

impl EmulatedConventionalNs {
    pub fn controller(&self) -> &Controller {
        &self.ctrl
    }
    /// FTL counters (device WAF: `flash_bytes_written / host_bytes_written`,
    /// GC, erases, wear) if this namespace is an SSD with an FTL.
    pub fn ftl_stats(&self) -> Option<FtlStats> {
        self.ctrl.ftl_stats(self.ns + 1)
    }
    pub fn nsid(&self) -> u32 {
        self.ns + 1
    }
}

impl zns_core::BlockDevice for EmulatedConventionalNs {
    fn lba_bytes(&self) -> u32 {
        self.config.lba_bytes
    }
    fn capacity_lbas(&self) -> u64 {
        self.config.capacity_lbas
    }
    fn max_transfer_lbas(&self) -> u32 {
        self.config.max_transfer_lbas
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.read_ns(self.ns, slba, buf)),
        )
    }
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl.run(
                self.ns,
                self.ctrl
                    .conv_write(self.ns, &self.config, slba, data, flags),
            ),
        )
    }
    fn discard(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(
            self.ns,
            self.ctrl.conv_discard(self.ns, &self.config, slba, nlb),
        ))
    }
    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.flush_all(self.ns)))
    }
}
