//! The suite against the devices that run in `cargo test`: the emulated
//! `tiny` device, ZRAID arrays of `tiny` members (no ZRWA offered to their
//! clients, their own open/active limits), and a device that breaks the
//! rules, which the suite must catch.

use std::rc::Rc;

use zns_conformance::{run, run_all, Capabilities, ExpectedGeometry, Outcome};
use zns_core::{
    CmdFuture, IoFlags, NvmeStatus, ReportFilter, ZoneDescriptor, ZoneSendCmd, ZonedConfig,
    ZonedDevice,
};
use zns_device::{Controller, ControllerOptions, NamespaceProfile, Profile, StoreKind};
use zns_raid::{RaidArray, RaidOptions};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

fn controller(rt: &Runtime, p: &Profile) -> Controller {
    Controller::new(
        &rt.handle(),
        p.clone(),
        ControllerOptions {
            store: StoreKind::Memory,
            host_stack: HostStack::Spdk,
        },
    )
    .unwrap()
}

fn tiny() -> Profile {
    Profile::builtin("tiny").unwrap()
}

/// The zoned namespace of a profile, as the profile writes it.
fn profile_zoned(p: &Profile) -> ZonedConfig {
    match &p.namespaces[0] {
        NamespaceProfile::Zoned(z) => z.clone(),
        other => panic!("not zoned: {other:?}"),
    }
}

#[test]
fn the_emulated_device_passes_every_case() {
    let mut rt = Runtime::new(1);
    let p = tiny();
    let c = controller(&rt, &p);
    let dev = c.first_zoned().unwrap();
    let caps =
        Capabilities::declared_by(dev.config()).expecting(ExpectedGeometry::of(&profile_zoned(&p)));
    assert!(caps.zone_append && caps.zrwa && caps.select_all);
    let r = run_all(&mut rt, &dev, &caps);
    eprintln!("tiny:\n{r}");
    r.assert_passed("the emulated tiny device");
    // only the case for devices without a ZRWA is skipped
    assert_eq!(r.skipped_names(), vec!["zrwa_refused"]);
}

#[test]
fn the_emulated_device_without_auto_close_or_limits_passes() {
    // no auto-close: the write past the open limit is Too Many Open Zones
    let mut rt = Runtime::new(2);
    let p = tiny()
        .with_overrides(&[(
            "namespace.0.auto_close_implicit".to_string(),
            "false".to_string(),
        )])
        .unwrap();
    let c = controller(&rt, &p);
    let dev = c.first_zoned().unwrap();
    let r = run_all(&mut rt, &dev, &Capabilities::declared_by(dev.config()));
    eprintln!("tiny without auto-close:\n{r}");
    r.assert_passed("tiny without auto-close");
    assert_eq!(r.outcome("auto_close"), Some(&Outcome::Passed));
}

fn raid(rt: &mut Runtime, n: usize) -> (Vec<Controller>, RaidArray) {
    let p = tiny();
    let ctrls: Vec<Controller> = (0..n).map(|_| controller(rt, &p)).collect();
    let devs = ctrls
        .iter()
        .map(|c| Rc::new(c.first_zoned().unwrap()) as Rc<dyn ZonedDevice>)
        .collect();
    let opts = RaidOptions {
        // tiny's ZRWA (16 blocks, granule 4): a chunk of 2 granules
        chunk_bytes: 32 * 1024,
        ..RaidOptions::default()
    };
    let h = rt.handle();
    let a = rt.block_on(RaidArray::create(&h, devs, opts)).unwrap();
    (ctrls, a)
}

#[test]
fn raid_arrays_pass_every_case_they_can_hold() {
    for n in [3, 5] {
        let mut rt = Runtime::new(n as u64);
        let (_ctrls, a) = raid(&mut rt, n);
        let cfg = a.config().clone();
        // an array offers no ZRWA (config().zrwa is None: its members' ZRWAs
        // hold its partial parity) but does carry Zone Append, whose limit
        // it leaves at "same as MDTS"
        assert!(cfg.zrwa.is_none());
        let caps = Capabilities::declared_by(&cfg).with_zone_append(true);
        let r = run_all(&mut rt, &a, &caps);
        eprintln!("RAID of {n} tiny ({cfg:?}):\n{r}");
        r.assert_passed(&format!("a ZRAID array of {n} tiny devices"));
        for case in [
            "zrwa_window_and_explicit_flush",
            "zrwa_implicit_flush",
            "zrwa_resources",
        ] {
            assert!(
                matches!(r.outcome(case), Some(Outcome::Skipped(why)) if why.contains("capability zrwa")),
                "{case}: {:?}",
                r.outcome(case)
            );
        }
        assert_eq!(r.outcome("zrwa_refused"), Some(&Outcome::Passed));
        assert_eq!(r.outcome("zone_append"), Some(&Outcome::Passed));
    }
}

/// The emulated device with one rule broken: writes off the write pointer
/// are reported as a write fault, and the data of every read comes back
/// inverted past the first block.
struct Broken<D> {
    inner: D,
    bad_status: bool,
    bad_data: bool,
}

impl<D: ZonedDevice> ZonedDevice for Broken<D> {
    fn config(&self) -> &ZonedConfig {
        self.inner.config()
    }
    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        self.inner.report_zones(start_lba, filter, max_zones)
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            self.inner.read(slba, buf).await?;
            if self.bad_data && buf.len() > 4096 {
                buf[4096] ^= 0xFF;
            }
            Ok(())
        })
    }
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            match self.inner.write(slba, data, flags).await {
                Err(e) if self.bad_status && e.status == NvmeStatus::ZoneInvalidWrite => {
                    Err(NvmeStatus::WriteFault.into())
                }
                r => r,
            }
        })
    }
    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        self.inner.append(zslba, data, flags)
    }
    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        self.inner.zone_send(cmd)
    }
    fn flush(&self) -> CmdFuture<'_, ()> {
        self.inner.flush()
    }
}

#[test]
fn a_device_that_breaks_the_rules_fails_the_cases_that_check_them() {
    let mut rt = Runtime::new(3);
    let c = controller(&rt, &tiny());
    let dev = Broken {
        inner: c.first_zoned().unwrap(),
        bad_status: true,
        bad_data: false,
    };
    let caps = Capabilities::declared_by(dev.config());
    let r = run(&mut rt, &dev, &caps, |n| n.starts_with("write_"));
    eprintln!("wrong status:\n{r}");
    assert!(
        matches!(r.outcome("write_off_wp"), Some(Outcome::Failed(why)) if why.contains("WriteFault")),
        "{r}"
    );
    assert_eq!(
        r.outcome("write_at_wp_and_read_back"),
        Some(&Outcome::Passed)
    );
    assert_eq!(r.results.len(), 4, "the filter selects the write_ cases");

    let dev = Broken {
        inner: c.first_zoned().unwrap(),
        bad_status: false,
        bad_data: true,
    };
    let r = run(&mut rt, &dev, &caps, |n| n == "write_at_wp_and_read_back");
    assert!(
        matches!(r.outcome("write_at_wp_and_read_back"), Some(Outcome::Failed(why)) if why.contains("differs")),
        "{r}"
    );
    assert_eq!((r.passed(), r.failed(), r.skipped()), (0, 1, 0));
}

#[test]
fn a_capability_the_device_lacks_is_a_skip_with_its_reason() {
    let mut rt = Runtime::new(4);
    let c = controller(&rt, &tiny());
    let dev = c.first_zoned().unwrap();
    let caps = Capabilities::declared_by(dev.config())
        .with_zone_append(false)
        .with_zrwa(false)
        .with_select_all(false);
    let r = run_all(&mut rt, &dev, &caps);
    eprintln!("tiny, declared without append, ZRWA, select-all:\n{r}");
    r.assert_passed("tiny without capabilities");
    let reason = |n: &str| match r.outcome(n) {
        Some(Outcome::Skipped(why)) => why.clone(),
        o => panic!("{n}: {o:?}"),
    };
    assert!(reason("zone_append").contains("zone_append"));
    assert!(reason("select_all").contains("select_all"));
    assert!(reason("zrwa_resources").contains("capability zrwa"));
    // it has a ZRWA its "transport" does not carry: no defined refusal
    assert!(reason("zrwa_refused").contains("does not carry"));
    assert_eq!(r.skipped(), 6);
}
