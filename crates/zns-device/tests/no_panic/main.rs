//! "Bad input gets a clear error and loses nothing. No panic from any job file,
//! trace, profile, image or API call; errors are values that carry the NVMe
//! status where one applies."
//!
//! Property tests that throw random and hostile input at the device layer:
//! 1. random (partly concurrent) command sequences with faults against the
//!    `tiny` zoned namespace, for every data store and host stack;
//! 2. the conventional namespace of `zn540-cns` against a reference model;
//! 3. randomly mutated profiles and `--set` overrides;
//! 4. random and mutated command traces;
//! 5. garbage, damaged and resealed (valid CRC, edited zone table) device images.
//!
//! Each property runs a fixed number of cases on a fresh seed (proptest prints
//! the shrunk failing input); `NO_PANIC_SCALE=N` runs N times as many.
//! One module each (zoned, conventional, profiles, traces, images), and the
//! regression tests for what they found (regressions).

#[path = "../support/ctrl.rs"]
mod test_ctrl;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::rc::Rc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use zns_core::{
    BlockDevice, IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor,
    ZoneSendCmd, ZoneState, ZonedDevice,
};
use zns_device::store::stamp;
use zns_device::trace::{fill_stamps, parse_trace, run_trace};
use zns_device::{
    Controller, ControllerOptions, EmulatedZns, NamespaceProfile, Profile, StoreKind,
};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

mod conventional;
mod images;
mod profiles;
mod regressions;
mod traces;
mod zoned;

#[allow(unused_imports)]
use {conventional::*, images::*, profiles::*, traces::*, zoned::*};

const STORES: [StoreKind; 3] = [StoreKind::None, StoreKind::Stamp, StoreKind::Memory];
const STACKS: [HostStack; 3] = [
    HostStack::Spdk,
    HostStack::IoUringNone,
    HostStack::IoUringMqDeadline,
];

/// `NO_PANIC_SCALE=N` runs N times the cases (for soak runs).
fn runner(cases: u32) -> TestRunner {
    let scale: u32 = std::env::var("NO_PANIC_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    TestRunner::new(Config {
        cases: cases.saturating_mul(scale.max(1)),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    })
}

/// Runs `test` on `cases` inputs from `strategy`; panics with proptest's
/// (shrunk) failure report.
fn check<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    if let Err(e) = runner(cases).run(&strategy, test) {
        panic!("{name}: {e}");
    }
}

fn violation(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

fn tiny(rt: &Runtime, store: StoreKind, host_stack: HostStack) -> Controller {
    test_ctrl::open(
        &rt.handle(),
        Profile::builtin("tiny").unwrap(),
        store,
        host_stack,
    )
}
