//! Shared helpers: a small test geometry and ways to put a zone in a given state.

use zns_core::*;

/// 8 zones of 64 LBAs, ZCAP 48, MOR 3, MAR 4, MDTS 16, ZASL 8, ZRWA 8 LBAs / FG 2 / 2 resources.
pub fn cfg() -> ZonedConfig {
    ZonedConfig {
        lba_bytes: 4096,
        zone_count: 8,
        zone_size_lbas: 64,
        zone_capacity_lbas: 48,
        max_open_zones: 3,
        max_active_zones: 4,
        max_transfer_lbas: 16,
        zone_append_limit_lbas: 8,
        auto_close_implicit: false,
        read_across_zone_boundary: false,
        zrwa: Some(ZrwaConfig {
            size_lbas: 8,
            flush_granularity_lbas: 2,
            resources: 2,
        }),
    }
}

pub fn set() -> ZoneSet {
    ZoneSet::new(cfg()).unwrap()
}

pub fn set_with(f: impl FnOnce(&mut ZonedConfig)) -> ZoneSet {
    let mut c = cfg();
    f(&mut c);
    ZoneSet::new(c).unwrap()
}

pub const ZSZE: u64 = 64;
pub const ZCAP: u64 = 48;

pub fn zs(zone: u32) -> u64 {
    zone as u64 * ZSZE
}

pub fn send(action: ZoneAction, slba: u64) -> ZoneSendCmd {
    ZoneSendCmd {
        action,
        slba,
        select_all: false,
    }
}

pub fn send_all(action: ZoneAction) -> ZoneSendCmd {
    ZoneSendCmd {
        action,
        slba: 0,
        select_all: true,
    }
}

pub fn open(s: &mut ZoneSet, zone: u32) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::Open { zrwa: false }, zs(zone)))
}
pub fn open_zrwa(s: &mut ZoneSet, zone: u32) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::Open { zrwa: true }, zs(zone)))
}
pub fn close(s: &mut ZoneSet, zone: u32) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::Close, zs(zone)))
}
pub fn finish(s: &mut ZoneSet, zone: u32) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::Finish, zs(zone)))
}
pub fn reset(s: &mut ZoneSet, zone: u32) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::Reset, zs(zone)))
}
pub fn flush(s: &mut ZoneSet, elba: u64) -> ZnsResult<MgmtEffect> {
    s.zone_send(send(ZoneAction::FlushZrwa, elba))
}

pub fn state(s: &ZoneSet, zone: u32) -> ZoneState {
    s.descriptor(zone).unwrap().state
}
pub fn wp(s: &ZoneSet, zone: u32) -> u64 {
    s.descriptor(zone).unwrap().write_pointer
}
pub fn zrwa(s: &ZoneSet, zone: u32) -> bool {
    s.descriptor(zone).unwrap().attributes.zrwa_valid
}

/// Starting situations of the transition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// ZSE.
    E,
    /// ZSIO, 4 LBAs written.
    IO,
    /// ZSEO, nothing written.
    EO,
    /// ZSC, 4 LBAs written.
    C,
    /// ZSF by writes.
    F,
    /// ZSF by Finish after 4 LBAs.
    FE,
    /// ZSRO (was ZSIO with 4 LBAs).
    RO,
    /// ZSO.
    O,
    /// ZSIO holding a ZRWA: WP = ZSLBA, 4 LBAs in the ZRWA.
    IOz,
    /// ZSEO holding a ZRWA: WP = ZSLBA, 4 LBAs in the ZRWA.
    EOz,
    /// ZSC holding a ZRWA: WP = ZSLBA, 4 LBAs in the ZRWA.
    Cz,
}

pub fn put(s: &mut ZoneSet, zone: u32, from: From) {
    let z = zs(zone);
    match from {
        From::E => {}
        From::IO => {
            s.write(z, 4).unwrap();
        }
        From::EO => {
            open(s, zone).unwrap();
        }
        From::C => {
            s.write(z, 4).unwrap();
            close(s, zone).unwrap();
        }
        From::F => {
            for k in 0..3 {
                s.write(z + 16 * k, 16).unwrap();
            }
        }
        From::FE => {
            s.write(z, 4).unwrap();
            finish(s, zone).unwrap();
        }
        From::RO => {
            s.write(z, 4).unwrap();
            s.inject_read_only(zone).unwrap();
        }
        From::O => {
            s.inject_offline(zone).unwrap();
        }
        From::IOz => {
            open_zrwa(s, zone).unwrap();
            close(s, zone).unwrap();
            s.write(z, 4).unwrap();
        }
        From::EOz => {
            open_zrwa(s, zone).unwrap();
            s.write(z, 4).unwrap();
        }
        From::Cz => {
            open_zrwa(s, zone).unwrap();
            s.write(z, 4).unwrap();
            close(s, zone).unwrap();
        }
    }
    s.check_invariants().unwrap();
}
