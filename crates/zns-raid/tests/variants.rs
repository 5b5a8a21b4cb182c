//! The RAIZN baseline and the ablation variants (ZRAID paper §6.3): every
//! variant stores and returns the same data (also with a member failed),
//! keeps partial parity where its design says, and the PP log zones are
//! garbage-collected when they fill.

mod support;

use rand::Rng;
use support::*;
use zns_core::{IoFlags, ZoneAction, ZoneSendCmd, ZonedDevice};
use zns_raid::{RaidArray, RaidOptions, RaidStats, Variant};
use zns_sim::{Runtime, SimRng};

/// Writes `zones` logical zones full with random request sizes at queue
/// depth `qd`, reads them back (also degraded with member 1 failed) and
/// returns the array's counters.
fn fill_and_check(variant: Variant, seed: u64, zones: u32, qd: usize) -> RaidStats {
    let mut rt = Runtime::new(seed);
    let opts = RaidOptions {
        variant,
        ..RaidOptions::default()
    };
    let (_ctrls, a) = variant_array(&mut rt, opts);
    fill_zones(&mut rt, &a, zones, qd, seed, 9, 0);
    let cfg = a.config().clone();
    let b = cfg.lba_bytes as u64;
    rt.block_on(a.quiesce());
    let check = |rt: &mut Runtime, a: &RaidArray| {
        for z in 0..zones {
            let start = z as u64 * cfg.zone_size_lbas;
            let mut x = 0;
            while x < cfg.zone_capacity_lbas {
                let n = 64.min(cfg.zone_capacity_lbas - x);
                let mut buf = vec![0u8; (n * b) as usize];
                rt.block_on(a.read(start + x, &mut buf)).unwrap();
                let want: Vec<u8> = (0..n)
                    .flat_map(|i| block_data(start + x + i, 9, b as usize))
                    .collect();
                assert!(buf == want, "{variant}: zone {z} data differs at {x}");
                x += n;
            }
        }
    };
    check(&mut rt, &a);
    a.fail_member(1);
    check(&mut rt, &a);
    a.stats()
}

#[test]
fn every_variant_stores_the_data_and_puts_partial_parity_where_it_says() {
    let mut waf = Vec::new();
    for v in Variant::ALL {
        let st = fill_and_check(v, 11, 2, 8);
        assert_eq!(st.data_blocks, st.host_blocks, "{v}");
        if v.pp_log_zone() {
            assert!(st.pp_log_blocks > 0, "{v}: {st:?}");
            assert_eq!(st.pp_zrwa_blocks, 0, "{v}");
            assert_eq!(st.pp_header_blocks > 0, v.pp_header(), "{v}: {st:?}");
        } else {
            assert_eq!(st.pp_log_blocks + st.pp_header_blocks, 0, "{v}");
            assert!(st.pp_zrwa_blocks > 0, "{v}: {st:?}");
        }
        if !v.zrwa_zones() {
            assert_eq!(st.zrwa_flushes, 0, "{v}");
        }
        waf.push((v, st.flash_waf()));
    }
    let get = |v: Variant| waf.iter().find(|w| w.0 == v).unwrap().1;
    // only full parity (and near-end PP) is permanent in ZRAID
    assert!(get(Variant::Zraid) < get(Variant::ZSM), "{waf:?}");
    assert!(get(Variant::ZSM) < get(Variant::ZS), "{waf:?}");
    assert!(
        (get(Variant::RaiznPlus) - get(Variant::ZS)).abs() < 0.05,
        "{waf:?}"
    );
}

#[test]
fn a_full_pp_log_zone_is_collected_and_writing_goes_on() {
    // 4 zones of 7 MiB data in small writes: far more PP than one
    // 1.75 MiB PP log zone holds
    let st = fill_and_check(Variant::RaiznPlus, 5, 4, 4);
    assert!(st.pp_gc_count > 0, "{st:?}");
}

/// An array whose members have room for one data zone besides the metadata
/// zone (and the PP log zone of the RAIZN family): every active zone taken.
fn one_zone_array(rt: &mut Runtime, variant: Variant, n: usize) -> RaidArray {
    let active = if variant.pp_log_zone() { "3" } else { "2" };
    let p = profile(
        "zn540",
        &[
            ("namespace.0.zone_count", "8"),
            ("namespace.0.zone_size_lbas", "512"),
            ("namespace.0.zone_capacity_lbas", "448"),
            ("namespace.0.max_open_zones", active),
            ("namespace.0.max_active_zones", active),
        ],
    );
    let ctrls = controllers(rt, &p, n);
    let h = rt.handle();
    let opts = RaidOptions {
        variant,
        ..RaidOptions::default()
    };
    let a = rt
        .block_on(RaidArray::create(&h, devs(&ctrls), opts))
        .unwrap();
    assert_eq!(a.config().max_active_zones, 1);
    a
}

/// The story: a PP log zone switched when the next record did not fit, but
/// the zone it left was not full and stayed active. On members whose active
/// zones were all taken (data zones, metadata zone, PP log zone), the new
/// PP log zone was one too many (Too Many Active Zones); ZNCache over a
/// RAIZN+ array found it. The old zone is now finished first.
#[test]
fn a_pp_log_zone_switch_takes_no_extra_active_zone() {
    let mut rt = Runtime::new(3);
    let a = one_zone_array(&mut rt, Variant::RaiznPlus, 5);
    fill_zones(&mut rt, &a, 4, 4, 3, 9, 0);
    rt.block_on(a.quiesce());
    assert!(a.stats().pp_gc_count > 0, "{:?}", a.stats());
}

/// The story: a logical zone is full when its last write is accepted, but
/// its member zones hold their active resource until the ZRWA manager has
/// flushed them full. Writing the next zone at once opened one member zone
/// too many (ZNCache over a ZRAID array found it). Member zones now open only
/// while fewer than the array's limit hold them.
#[test]
fn the_next_zone_waits_for_the_full_one_to_give_back_its_members() {
    for variant in [Variant::Zraid, Variant::RaiznPlus] {
        let mut rt = Runtime::new(5);
        let a = one_zone_array(&mut rt, variant, 3);
        let zones = a.config().zone_count;
        // (a member zone opened past the members' active limit fails the
        // write that opens it, and fill_zones with it)
        fill_zones(&mut rt, &a, zones, 8, 5, 9, 0);
        rt.block_on(a.quiesce());
        let report = rt
            .block_on(a.report_zones(0, zns_core::ReportFilter::All, zones as usize))
            .unwrap();
        assert_eq!(report.len(), zones as usize);
        assert!(
            report.iter().all(|z| z.state == zns_core::ZoneState::Full),
            "{variant:?}: every zone written full, one after the other: {report:?}"
        );
    }
}

#[test]
fn non_zraid_variants_refuse_what_they_do_not_implement() {
    let mut rt = Runtime::new(1);
    let ctrls = controllers(&rt, &small_zn540(), 3);
    let h = rt.handle();
    let opts = RaidOptions {
        variant: Variant::RaiznPlus,
        ..RaidOptions::default()
    };
    let a = rt
        .block_on(RaidArray::create(&h, devs(&ctrls), opts))
        .unwrap();
    // two PP log zones and two metadata zones are reserved
    assert_eq!(a.config().zone_count, 8 - 4);
    rt.block_on(a.zone_send(ZoneSendCmd {
        action: ZoneAction::Reset,
        slba: 0,
        select_all: true,
    }))
    .unwrap();
    let e = rt
        .block_on(RaidArray::open(&h, devs(&ctrls), opts))
        .err()
        .unwrap();
    assert!(e.to_string().contains("raizn+"), "{e}");
    for (s, v) in [("RAIZN+", Variant::RaiznPlus), ("z+s+m", Variant::ZSM)] {
        assert_eq!(s.parse::<Variant>().unwrap(), v);
    }
    assert!("zz".parse::<Variant>().is_err());
}

#[test]
fn an_array_of_aggregated_small_zone_members_stores_the_data() {
    use std::rc::Rc;
    use zns_core::ReportFilter;
    use zns_raid::AggregatedZns;
    // PM1731a: ZRWA 64 KiB / ZRWAFG 32 KiB, too small for a 64 KiB chunk
    // unless 4 zones are aggregated (paper §6.5)
    let p = profile(
        "pm1731a",
        &[
            ("namespace.0.zone_count", "64"),
            ("namespace.0.zone_size_lbas", "256"),
            ("namespace.0.zone_capacity_lbas", "256"),
        ],
    );
    let mut rt = Runtime::new(3);
    let h = rt.handle();
    let ctrls = controllers(&rt, &p, 3);
    let plain = rt.block_on(RaidArray::create(&h, devs(&ctrls), RaidOptions::default()));
    assert!(plain.is_err());
    let members: Vec<Rc<dyn ZonedDevice>> = devs(&ctrls)
        .into_iter()
        .map(|d| Rc::new(AggregatedZns::new(&h, d, 4).unwrap()) as Rc<dyn ZonedDevice>)
        .collect();
    let a = rt
        .block_on(RaidArray::create(
            &h,
            members.clone(),
            RaidOptions::default(),
        ))
        .unwrap();
    let cfg = a.config().clone();
    let b = cfg.lba_bytes as usize;
    let mut off = 0;
    let mut rng = SimRng::from_seed_u64(3);
    while off < cfg.zone_capacity_lbas {
        let n = rng.gen_range(1..=48u64).min(cfg.zone_capacity_lbas - off);
        let data: Vec<u8> = (0..n).flat_map(|i| block_data(off + i, 4, b)).collect();
        rt.block_on(a.write(off, &data, IoFlags::NONE)).unwrap();
        off += n;
    }
    rt.block_on(a.quiesce());
    let mut buf = vec![0u8; 32 * b];
    for x in (0..cfg.zone_capacity_lbas).step_by(32) {
        rt.block_on(a.read(x, &mut buf)).unwrap();
        let want: Vec<u8> = (0..32).flat_map(|i| block_data(x + i, 4, b)).collect();
        assert!(buf == want, "data differs at {x}");
    }
    // the members' aggregated zone 0 is full, zone 1 empty
    let d = rt
        .block_on(members[0].report_zones(0, ReportFilter::All, 2))
        .unwrap();
    assert_eq!(d[0].write_pointer - d[0].start_lba, d[0].capacity_lbas);
    assert_eq!(d[1].write_pointer, d[1].start_lba);
}
