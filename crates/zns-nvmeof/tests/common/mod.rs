//! An emulated device served in process for the tests and the benchmark:
//! `target` opened on zns-serve's paced runtime (as `zns serve` opens it),
//! every namespace exported as one subsystem on a loopback port.

use zns_nvmeof::{Export, NvmeTcpServer};
use zns_serve::{Host, HostConfig, Opened};
use zns_sim::timing::HostStack;
use zns_target::{open, OpenOptions, StoreKind, TargetSpec};

pub struct Served {
    pub server: NvmeTcpServer,
    /// The devices' runtime: it stops when this drops, after the server
    /// (fields drop in order).
    _host: Host,
}

/// `target` (with profile `overrides`) at `speed` times real time, as
/// subsystem `nqn`; its data in memory.
pub fn serve(target: &str, overrides: &[(&str, &str)], speed: f64, nqn: &str) -> Served {
    let cfg = HostConfig {
        seed: 1,
        speed,
        io_buf_bytes: 1 << 20,
    };
    let name = target.to_string();
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let host = Host::start(cfg, move |rt| {
        let spec = TargetSpec::parse(&name)?.with_overrides(&overrides)?;
        // (the host stack `zns serve` and `zns bench`'s io_uring engine use)
        let opts = OpenOptions {
            store: StoreKind::Memory,
            host_stack: HostStack::IoUringNone,
        };
        let dev = open(rt, &spec, &opts)?;
        let namespaces = match &dev {
            zns_target::OpenedDevice::Controller(c) => {
                (1..=c.namespace_count()).map(Some).collect()
            }
            _ => vec![None],
        };
        let mut served = Vec::new();
        for nsid in namespaces {
            served.push((name.clone(), dev.target(&name, nsid)?));
        }
        Ok(Opened {
            served,
            keep_alive: Box::new(dev),
            finish: Box::new(|_| serde_json::Value::Null),
        })
    })
    .expect("the device opens");
    let links = (0..host.devices().len()).map(|i| host.link(i)).collect();
    let export = Export::probe(nqn, target, links).expect("probe");
    let server = NvmeTcpServer::start("127.0.0.1:0".parse().unwrap(), vec![export]).unwrap();
    Served {
        server,
        _host: host,
    }
}
