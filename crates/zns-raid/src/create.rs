//! Building an array: the members and options checked (`validate`, and
//! `plan` without any device), the logical geometry and layout they give,
//! the array's in-memory state, and `create`, which resets the members and
//! writes the superblocks. Opening an existing array is `recovery`'s.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rand::RngCore;
use zns_core::{NvmeError, ZoneAction, ZoneSendCmd, ZoneSet, ZonedConfig, ZonedDevice};
use zns_sim::sync::Notify;
use zns_sim::Handle;

use crate::engine::md_append;
use crate::layout::Layout;
use crate::state::{Inner, MdMember, State, ZoneRt};
use crate::stats::RaidStats;
use crate::superblock::superblock;
use crate::{RaidArray, RaidError, RaidOptions};

/// Checks the members and options; returns the layout and the logical config.
pub(crate) fn validate(
    members: &[Rc<dyn ZonedDevice>],
    opts: &RaidOptions,
) -> Result<(Layout, ZonedConfig), RaidError> {
    if members.len() < 3 {
        return Err(RaidError::TooFewMembers {
            members: members.len(),
        });
    }
    if let Some(m0) = members.first().map(|m| m.config().clone()) {
        for (i, m) in members.iter().enumerate().skip(1) {
            let c = m.config();
            if *c != m0 {
                return Err(RaidError::MixedGeometry {
                    member: i,
                    detail: describe_difference(&m0, c),
                });
            }
        }
    }
    plan(members.first().map(|m| m.config()), members.len(), opts)
}

/// The layout and logical config of an array of `n` members of geometry
/// `m0` (None: no member) with `opts`, or why it cannot be built: every
/// check of [`validate`] but the members' sameness, so a front end can check
/// a configuration before making any device (`RaidArray::check_geometry`).
pub(crate) fn plan(
    m0: Option<&ZonedConfig>,
    n: usize,
    opts: &RaidOptions,
) -> Result<(Layout, ZonedConfig), RaidError> {
    let m0 = match m0 {
        Some(m0) if n >= 3 => m0,
        _ => return Err(RaidError::TooFewMembers { members: n }),
    };
    let variant = opts.variant;
    let lba = m0.lba_bytes as u64;
    // normal-zone variants (RAIZN) need no ZRWA; the layout still has a PP
    // distance, of one chunk, for the (unused) ZRWA fields
    let zrwa = if variant.zrwa_zones() {
        m0.zrwa.ok_or(RaidError::NoZrwa)?
    } else {
        zns_core::ZrwaConfig {
            size_lbas: 2 * (opts.chunk_bytes / lba.max(1)),
            flush_granularity_lbas: 1,
            resources: u32::MAX,
        }
    };
    if opts.chunk_bytes == 0 || opts.chunk_bytes % lba != 0 {
        return Err(RaidError::ChunkNotBlocks {
            chunk_bytes: opts.chunk_bytes,
            lba_bytes: lba,
        });
    }
    let c = opts.chunk_bytes / lba;
    let fg = zrwa.flush_granularity_lbas;
    if zrwa.size_lbas < 4 * fg {
        return Err(RaidError::ZrwaTooSmall {
            zrwa_lbas: zrwa.size_lbas,
            fg_lbas: fg,
        });
    }
    if c < 2 * fg || c % (2 * fg) != 0 {
        return Err(RaidError::ChunkTooSmall {
            chunk_lbas: c,
            fg_lbas: fg,
            lba_bytes: lba,
        });
    }
    if 2 * c > zrwa.size_lbas {
        return Err(RaidError::ChunkTooLarge {
            chunk_lbas: c,
            zrwa_lbas: zrwa.size_lbas,
            lba_bytes: lba,
        });
    }
    if c > m0.max_transfer_lbas as u64 {
        return Err(RaidError::ChunkOverLimit {
            chunk_lbas: c,
            what: "maximum transfer (MDTS)",
            limit_lbas: m0.max_transfer_lbas as u64,
        });
    }
    if c + 1 > m0.append_limit_lbas() as u64 {
        return Err(RaidError::ChunkOverLimit {
            chunk_lbas: c,
            what: "zone append limit (ZASL, a PP record is a chunk plus a header block)",
            limit_lbas: m0.append_limit_lbas() as u64,
        });
    }
    let reserved = variant.reserved_zones();
    if m0.zone_count < reserved + 1 {
        return Err(RaidError::TooFewZones {
            zones: m0.zone_count,
        });
    }
    let rows = m0.zone_capacity_lbas / c;
    if rows == 0 {
        return Err(RaidError::ZoneTooSmall {
            cap_lbas: m0.zone_capacity_lbas,
            chunk_lbas: c,
        });
    }
    let n = n as u32;
    let layout = Layout {
        n,
        chunk_lbas: c,
        rows,
        h: zrwa.size_lbas / c / 2,
        zrwa_lbas: zrwa.size_lbas,
        fg_lbas: fg,
        lba_bytes: lba,
        member_zone_size: m0.zone_size_lbas,
        member_zone_cap: m0.zone_capacity_lbas,
    };
    let lim = |x: u32| if x == 0 { u32::MAX } else { x };
    // one open/active resource of every member is the metadata zone's, one
    // more the PP log zone's
    let logs = reserved / 2;
    let active = lim(m0.max_open_zones)
        .saturating_sub(logs)
        .min(lim(m0.max_active_zones).saturating_sub(logs))
        .min(if variant.zrwa_zones() {
            zrwa.resources
        } else {
            u32::MAX
        });
    if active == 0 {
        return Err(RaidError::NoZoneResources);
    }
    let nd = (n - 1) as u64;
    let cfg = ZonedConfig {
        lba_bytes: m0.lba_bytes,
        zone_count: m0.zone_count - reserved,
        zone_size_lbas: m0.zone_size_lbas * nd,
        zone_capacity_lbas: layout.logical_cap(),
        max_open_zones: active,
        max_active_zones: active,
        max_transfer_lbas: (m0.max_transfer_lbas as u64 * nd).min(u32::MAX as u64) as u32,
        zone_append_limit_lbas: 0,
        auto_close_implicit: true,
        read_across_zone_boundary: false,
        zrwa: None,
    };
    cfg.validate()
        .map_err(|e| RaidError::NotAnArray(format!("logical geometry: {e}")))?;
    Ok((layout, cfg))
}

pub(crate) fn describe_difference(a: &ZonedConfig, b: &ZonedConfig) -> String {
    let mut d = Vec::new();
    macro_rules! cmp {
        ($f:ident) => {
            if a.$f != b.$f {
                d.push(format!(
                    "{} = {:?} (member 0: {:?})",
                    stringify!($f),
                    b.$f,
                    a.$f
                ));
            }
        };
    }
    cmp!(lba_bytes);
    cmp!(zone_count);
    cmp!(zone_size_lbas);
    cmp!(zone_capacity_lbas);
    cmp!(max_open_zones);
    cmp!(max_active_zones);
    cmp!(max_transfer_lbas);
    cmp!(zone_append_limit_lbas);
    cmp!(auto_close_implicit);
    cmp!(read_across_zone_boundary);
    if a.zrwa != b.zrwa {
        let zrwa = |z: &Option<zns_core::ZrwaConfig>| match z {
            None => "none".to_string(),
            Some(z) => format!(
                "{} LBAs, flush granularity {} LBAs, {} resources",
                z.size_lbas, z.flush_granularity_lbas, z.resources
            ),
        };
        d.push(format!(
            "ZRWA {} (member 0: {})",
            zrwa(&b.zrwa),
            zrwa(&a.zrwa)
        ));
    }
    d.join(", ")
}

pub(crate) fn new_inner(
    handle: &Handle,
    members: Vec<Rc<dyn ZonedDevice>>,
    layout: Layout,
    cfg: ZonedConfig,
    opts: RaidOptions,
    array_id: u64,
) -> Result<Rc<Inner>, RaidError> {
    let n = members.len();
    let member_cfg = members[0].config().clone();
    let zones = ZoneSet::new(cfg.clone()).map_err(|e| RaidError::NotAnArray(e.to_string()))?;
    let zcount = cfg.zone_count as usize;
    Ok(Rc::new(Inner {
        handle: handle.clone(),
        members: RefCell::new(members),
        failed: RefCell::new(vec![false; n]),
        layout,
        opts,
        cfg,
        member_cfg,
        array_id: Cell::new(array_id),
        st: RefCell::new(State {
            zones,
            z: (0..zcount).map(|_| ZoneRt::new(n)).collect(),
            seq: 0,
            poisoned: None,
            stats: RaidStats::default(),
            md: vec![
                MdMember {
                    cur: 0,
                    epoch: 1,
                    switching: false
                };
                n
            ],
            pplog: vec![
                MdMember {
                    cur: 0,
                    epoch: 1,
                    switching: false
                };
                n
            ],
            fifo_free_ns: vec![0; zcount.max(1)],
            pp_mutex_free_ns: Vec::new(),
            member_active_zones: 0,
        }),
        wake: Notify::new(),
        zwake: (0..zcount).map(|_| Notify::new()).collect(),
        pool: RefCell::new(Vec::new()),
        // a chunk and a record header block
        zeros: if opts.timing_only {
            vec![0; (layout.chunk_lbas as usize + 1) * layout.lba_bytes as usize]
        } else {
            Vec::new()
        },
        pwake: (0..zcount).map(|_| Notify::new()).collect(),
        gate: Default::default(),
    }))
}

pub(crate) fn dev_err(member: usize) -> impl Fn(NvmeError) -> RaidError {
    move |error| RaidError::Device { member, error }
}

impl RaidArray {
    /// The logical geometry `create` would give an array of `members`
    /// members of geometry `member` with `opts`, or the error it would
    /// refuse them with — checked without making any device, so that a
    /// front end refuses a configuration before running anything on it.
    pub fn check_geometry(
        member: &ZonedConfig,
        members: usize,
        opts: &RaidOptions,
    ) -> Result<ZonedConfig, RaidError> {
        plan(Some(member), members, opts).map(|(_, cfg)| cfg)
    }

    /// Builds a new array: resets every zone of every member and writes the
    /// superblocks. Members must all have the same geometry (see `RaidError`).
    pub async fn create(
        handle: &Handle,
        members: Vec<Rc<dyn ZonedDevice>>,
        opts: RaidOptions,
    ) -> Result<RaidArray, RaidError> {
        let (layout, cfg) = validate(&members, &opts)?;
        for (i, m) in members.iter().enumerate() {
            m.zone_send(ZoneSendCmd {
                action: ZoneAction::Reset,
                slba: 0,
                select_all: true,
            })
            .await
            .map_err(dev_err(i))?;
        }
        let array_id = handle.rng().next_u64() | 1;
        let inner = new_inner(handle, members, layout, cfg, opts, array_id)?;
        for dev in 0..layout.n {
            md_append(&inner, dev, superblock(&inner, dev, 1))
                .await
                .map_err(dev_err(dev as usize))?;
        }
        Ok(RaidArray { inner })
    }
}
