//! A `raid:` array on member device images: the first open formats empty
//! images into a new array, a later open finds the array they hold and
//! recovers it (data written before a clean shutdown reads back; so does
//! FUA data after a crash, i.e. without one), and names that mix images and
//! profiles, repeat an image or override an image's geometry are refused.

use std::path::{Path, PathBuf};

use zns_core::IoFlags;
use zns_device::{Controller, Profile};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;
use zns_target::{open, OpenOptions, OpenedDevice, Target, TargetSpec};

fn images(dir: &Path, n: usize) -> Vec<PathBuf> {
    let rt = Runtime::new(1);
    (0..n)
        .map(|i| {
            let path = dir.join(format!("m{i}.img"));
            Controller::create_image(
                &rt.handle(),
                Profile::builtin("tiny").unwrap(),
                &path,
                HostStack::Spdk,
            )
            .unwrap();
            path
        })
        .collect()
}

fn name(paths: &[PathBuf], options: &str) -> String {
    let members: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    format!("raid:{},{options}", members.join(","))
}

fn open_array(rt: &mut Runtime, name: &str) -> Result<OpenedDevice, String> {
    let spec = TargetSpec::parse(name).map_err(|e| e.to_string())?;
    open(rt, &spec, &OpenOptions::default()).map_err(|e| e.to_string())
}

fn pattern(seed: u8, bytes: usize) -> Vec<u8> {
    (0..bytes)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn an_array_on_member_images_persists_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let paths = images(dir.path(), 3);
    let name = name(&paths, "chunk=32k");
    let chunk = 32 * 1024;
    let flushed = pattern(7, 3 * chunk);
    let fua = pattern(9, chunk);
    {
        let mut rt = Runtime::new(1);
        let dev = open_array(&mut rt, &name).unwrap();
        let Target::Zoned(z) = dev.target(&name, None).unwrap() else {
            panic!("an array is zoned");
        };
        rt.block_on(z.write(0, &flushed, IoFlags::default()))
            .unwrap();
        rt.block_on(z.flush()).unwrap();
        rt.block_on(dev.shutdown()).unwrap();
        let stats = dev.stats_json();
        assert!(
            stats["raid"]["flash_waf"].as_f64().unwrap() > 1.0,
            "{stats}"
        );
        assert_eq!(stats["controllers"].as_array().unwrap().len(), 3);
    }
    let lbas = (flushed.len() / 4096) as u64;
    {
        let mut rt = Runtime::new(2);
        let dev = open_array(&mut rt, &name).unwrap();
        let Target::Zoned(z) = dev.target(&name, None).unwrap() else {
            panic!("an array is zoned");
        };
        let mut back = vec![0u8; flushed.len()];
        rt.block_on(z.read(0, &mut back)).unwrap();
        assert!(
            back == flushed,
            "data written before a clean shutdown reads back"
        );
        // a FUA write, then no shutdown: the array's members are dropped as
        // in a crash of the process
        rt.block_on(z.write(lbas, &fua, IoFlags::FUA)).unwrap();
    }
    let mut rt = Runtime::new(3);
    let dev = open_array(&mut rt, &name).unwrap();
    let Target::Zoned(z) = dev.target(&name, None).unwrap() else {
        panic!("an array is zoned");
    };
    let mut back = vec![0u8; fua.len()];
    rt.block_on(z.read(lbas, &mut back)).unwrap();
    assert!(
        back == fua,
        "a FUA write survives reopening without a shutdown"
    );
}

#[test]
fn member_images_are_refused_where_they_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let paths = images(dir.path(), 3);
    // RAIZN+ cannot reopen an array (only ZRAID recovers one)
    let raizn = name(&paths, "chunk=32k,variant=raizn+");
    {
        let mut rt = Runtime::new(1);
        open_array(&mut rt, &raizn).unwrap();
    }
    let mut rt = Runtime::new(1);
    let e = open_array(&mut rt, &raizn).err().unwrap();
    assert!(e.contains("opening an existing array"), "{e}");

    let first = paths[0].display();
    let e = TargetSpec::parse(&format!("raid:{first},tiny,tiny"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("all profiles or all device images"), "{e}");
    let e = TargetSpec::parse(&format!("raid:3x{first}"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("one member"), "{e}");
    let spec = TargetSpec::parse(&name(&paths, "chunk=32k")).unwrap();
    let e = spec
        .with_overrides(&[("namespace.0.zone_count".into(), "4".into())])
        .err()
        .unwrap();
    assert!(e.to_string().contains("member device images"), "{e}");
}
