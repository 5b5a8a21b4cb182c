//! The PDU fuzzer (proptest): any byte stream, random or a valid PDU
//! stream mutated, parsed as the target parses its sockets: no panic, no
//! hang (every step consumes a PDU, asks for more within the limit, or
//! stops with a wire error), and valid PDUs roundtrip. The command
//! decoders get arbitrary SQEs the same way. The input counts are the
//! `CASES_*` constants (docs/nvme-tcp.md quotes them).

use proptest::prelude::*;
use zns_nvmeof::command::Sqe;
use zns_nvmeof::controller::{self, ControllerState, Subsystem};
use zns_nvmeof::identify::{namespace_uuid, ControllerIdentity, Namespace, NsKind};
use zns_nvmeof::io::IoCmd;
use zns_nvmeof::pdu::{self, CapsuleCmd, DataPdu, Digests, IcReq, Limits, Parsed, Pdu, R2t};

const CASES_RANDOM: u32 = 20_000;
const CASES_MUTATED: u32 = 20_000;
const CASES_SQE: u32 = 20_000;

fn limits(header: bool, data: bool, max: usize) -> Limits {
    Limits {
        digests: Digests { header, data },
        max_pdu_bytes: max,
    }
}

/// Parses `stream` as a connection would, to its end; the PDUs found.
fn drain(stream: &[u8], limits: &Limits) -> usize {
    let mut at = 0;
    let mut pdus = 0;
    // each round consumes at least a common header, so this ends
    loop {
        match pdu::parse(&stream[at..], limits) {
            Ok(Parsed::Pdu(_, used)) => {
                assert!(used >= pdu::CH_BYTES && used <= stream.len() - at);
                at += used;
                pdus += 1;
            }
            Ok(Parsed::NeedMore(n)) => {
                assert!(n > stream.len() - at, "asks for bytes it has");
                assert!(
                    n <= limits
                        .max_pdu_bytes
                        .max(pdu::TERM_MAX_BYTES)
                        .max(pdu::IC_BYTES)
                );
                return pdus;
            }
            Err(_) => return pdus,
        }
    }
}

fn any_pdu() -> impl Strategy<Value = Pdu> {
    let data = proptest::collection::vec(any::<u8>(), 0..2048);
    prop_oneof![
        (any::<u8>(), 0u8..4, any::<u32>()).prop_map(|(hpda, d, maxr2t)| Pdu::IcReq(IcReq {
            pfv: 0,
            hpda,
            digests: Digests::from_bits(d),
            maxr2t,
        })),
        (proptest::array::uniform32(any::<u8>()), data.clone()).prop_map(|(half, data)| {
            let mut sqe = [0u8; 64];
            sqe[..32].copy_from_slice(&half);
            sqe[32..].copy_from_slice(&half);
            Pdu::CapsuleCmd(CapsuleCmd { sqe, data })
        }),
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<bool>(),
            data.clone()
        )
            .prop_map(|(cccid, ttag, offset, last, data)| Pdu::H2CData(DataPdu {
                cccid,
                ttag,
                offset,
                last,
                success: false,
                data,
            })),
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()).prop_map(
            |(cccid, ttag, offset, length)| Pdu::R2t(R2t {
                cccid,
                ttag,
                offset,
                length,
            })
        ),
        proptest::array::uniform16(any::<u8>()).prop_map(Pdu::CapsuleResp),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES_RANDOM))]
    #[test]
    fn random_bytes_never_panic_or_hang(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        header in any::<bool>(),
        data in any::<bool>(),
        max in 128usize..65536,
        // a plausible start: a known PDU type and header length
        ty in 0u8..10,
        hlen in prop_oneof![Just(24u8), Just(72), Just(128), any::<u8>()],
    ) {
        let l = limits(header, data, max);
        drain(&bytes, &l);
        let mut shaped = bytes.clone();
        if shaped.len() >= 4 {
            shaped[0] = ty;
            shaped[2] = hlen;
        }
        drain(&shaped, &l);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES_MUTATED))]
    #[test]
    fn valid_streams_roundtrip_and_mutations_never_panic(
        pdus in proptest::collection::vec(any_pdu(), 1..6),
        header in any::<bool>(),
        data in any::<bool>(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in any::<usize>(),
    ) {
        let l = limits(header, data, 1 << 20);
        let mut stream = Vec::new();
        for p in &pdus {
            p.encode(l.digests, &mut stream);
        }
        // unmutated: every PDU back as it was
        let mut at = 0;
        for p in &pdus {
            match pdu::parse(&stream[at..], &l) {
                Ok(Parsed::Pdu(q, used)) => {
                    prop_assert_eq!(&q, p);
                    at += used;
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
        prop_assert_eq!(at, stream.len());
        // mutated and truncated: no panic, no hang
        let mut bad = stream.clone();
        for (i, x) in &flips {
            let n = bad.len();
            bad[i % n] ^= x | 1;
        }
        drain(&bad, &l);
        drain(&stream[..cut % (stream.len() + 1)], &l);
    }
}

fn subsystem() -> Subsystem {
    let zoned = match &zns_device::Profile::builtin("zn540").unwrap().namespaces[0] {
        zns_device::NamespaceProfile::Zoned(c) => c.clone(),
        other => panic!("zn540's namespace 1 is zoned, not {other:?}"),
    };
    let nqn = "nqn.fuzz";
    Subsystem {
        identity: ControllerIdentity {
            subnqn: nqn.into(),
            serial: "FUZZ".into(),
            model: "fuzz".into(),
            firmware: "0".into(),
            mdts: 7,
            queue_entries: 128,
        },
        namespaces: vec![
            Namespace {
                nsid: 1,
                kind: NsKind::Conventional {
                    lba_bytes: 4096,
                    capacity_lbas: 1 << 20,
                    max_transfer_lbas: 128,
                },
                uuid: namespace_uuid(nqn, 1),
            },
            Namespace {
                nsid: 2,
                kind: NsKind::Zoned(zoned),
                uuid: namespace_uuid(nqn, 2),
            },
        ],
        zasl: 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES_SQE))]
    #[test]
    fn any_sqe_decodes_or_fails_with_a_status(
        half in proptest::array::uniform32(any::<u8>()),
        tail in proptest::array::uniform32(any::<u8>()),
        op in prop_oneof![Just(0x7Fu8), Just(0x06), Just(0x02), Just(0x09), Just(0x0A), Just(0x79), Just(0x7A), Just(0x7D), any::<u8>()],
        ready in any::<bool>(),
        data in proptest::collection::vec(any::<u8>(), 0..1100),
    ) {
        let mut b = [0u8; 64];
        b[..32].copy_from_slice(&half);
        b[32..].copy_from_slice(&tail);
        b[0] = op;
        let sqe = Sqe(b);
        let sub = subsystem();
        let mut state = ControllerState { csts: u32::from(ready), ..ControllerState::default() };
        let _ = controller::admin(&sub, &mut state, 1, &sqe);
        let _ = controller::Connect::decode(&sqe, &data);
        for ns in &sub.namespaces {
            if let Ok(cmd) = IoCmd::decode(&sqe, ns) {
                let _ = (cmd.data_in_bytes(4096), cmd.data_out_bytes(4096));
            }
        }
    }
}
