//! Property 4: random and mutated command traces.

use super::*;
use crate::test_ctrl;

pub(super) const EXAMPLE_TRACES: [&str; 2] = [
    include_str!("../../../../examples/zrwa.jsonl"),
    include_str!("../../../../examples/limits.jsonl"),
];

pub(super) fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..300u64).prop_map(|v| v.to_string()),
        2 => (0..20u64).prop_map(|v| v.to_string()),
        1 => Just(u64::MAX.to_string()),
        1 => Just(u32::MAX.to_string()),
        1 => Just((u32::MAX as u64 + 1).to_string()),
        1 => Just(i64::MAX.to_string()),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => Just("-1".to_string()),
        1 => Just("1.5".to_string()),
        1 => Just("1e30".to_string()),
        1 => Just("true".to_string()),
        1 => Just("false".to_string()),
        1 => Just("null".to_string()),
        1 => Just("\"x\"".to_string()),
        1 => Just("[]".to_string()),
        1 => Just("{}".to_string()),
    ]
}

/// Trace operations with the fields each takes (and some that are not operations).
pub(super) const OPS: [(&str, &[&str]); 16] = [
    ("open", &["nsid", "zone", "slba", "all", "zrwa"]),
    ("close", &["nsid", "zone", "slba", "all"]),
    ("finish", &["nsid", "zone", "slba", "all"]),
    ("reset", &["nsid", "zone", "slba", "all"]),
    ("write", &["nsid", "slba", "nlb", "fua", "stamp"]),
    ("append", &["nsid", "zone", "slba", "nlb", "fua", "stamp"]),
    ("read", &["nsid", "slba", "nlb"]),
    ("zrwa-flush", &["nsid", "lba"]),
    ("report", &["nsid", "zone", "count"]),
    ("flush", &["nsid"]),
    ("wait", &["ns"]),
    ("power-cut", &[]),
    ("power-on", &[]),
    ("bogus", &["zone"]),
    ("", &[]),
    ("OPEN", &["zone"]),
];

/// Candidate values for one field, one per kind of field; `value` picks.
#[derive(Debug, Clone)]
pub(super) struct FieldValues {
    draw: u8,
    nsid: String,
    zone: String,
    lba: String,
    nlb: String,
    small: String,
    ns: String,
    boolean: String,
    junk: Option<String>,
}

impl FieldValues {
    fn value(&self, field: &str) -> &str {
        if let Some(j) = &self.junk {
            return j;
        }
        match field {
            "nsid" => &self.nsid,
            "zone" => &self.zone,
            "slba" | "lba" => &self.lba,
            "nlb" => &self.nlb,
            "count" | "stamp" => &self.small,
            "ns" => &self.ns,
            _ => &self.boolean,
        }
    }
}

pub(super) fn field_values() -> impl Strategy<Value = FieldValues> {
    let num = |s: BoxedStrategy<u64>| s.prop_map(|v| v.to_string());
    (
        any::<u8>(),
        num(prop_oneof![150 => Just(1u64), 1 => Just(2u64), 1 => Just(0u64), 1 => Just(u32::MAX as u64)].boxed()),
        num(prop_oneof![150 => 0..8u64, 30 => 8..16u64, 1 => 16..20u64, 3 => Just(u32::MAX as u64), 1 => any::<u32>().prop_map(u64::from)].boxed()),
        num(prop_oneof![
            6 => (0..8u64, 0..20u64).prop_map(|(z, o)| z * 256 + o),
            2 => 0..4200u64,
            1 => prop_oneof![Just(u64::MAX), Just(i64::MAX as u64), any::<u64>()],
        ].boxed()),
        num(prop_oneof![10 => 1..9u64, 4 => 0..40u64, 1 => prop_oneof![Just(u64::MAX), Just(1u64 << 20), any::<u64>()]].boxed()),
        num(prop_oneof![8 => 0..20u64, 1 => any::<u64>()].boxed()),
        num(prop_oneof![8 => 0..200_000u64, 1 => Just(u64::MAX), 1 => Just(1u64 << 62), 1 => any::<u64>()].boxed()),
        any::<bool>().prop_map(|b| b.to_string()),
        prop::option::weighted(0.01, json_value()),
    )
        .prop_map(|(draw, nsid, zone, lba, nlb, small, ns, boolean, junk)| FieldValues {
            draw,
            nsid,
            zone,
            lba,
            nlb,
            small,
            ns,
            boolean,
            junk,
        })
}

/// Whether a line carries `field`: required ones always, a zone target
/// mostly (without one the whole replay stops), the rest half the time.
pub(super) fn carries(op: &str, field: &str, draw: u8) -> bool {
    let required = matches!(
        (op, field),
        ("write" | "read", "slba" | "nlb")
            | ("append", "nlb")
            | ("zrwa-flush", "lba")
            | ("wait", "ns")
    );
    let targets = matches!(op, "open" | "close" | "finish" | "reset" | "append");
    match field {
        _ if required => true,
        "zone" if targets => draw < 252,
        "slba" if targets => draw < 3,
        _ => draw < 128,
    }
}

/// A JSON object: an operation with a random subset of its fields, now and
/// then a field it does not take or a value of the wrong type.
pub(super) fn trace_line() -> impl Strategy<Value = String> {
    (
        prop_oneof![200 => 0..OPS.len() - 3, 1 => OPS.len() - 3..OPS.len()],
        prop::collection::vec(field_values(), 6),
        prop::option::weighted(0.01, (0..6usize, json_value())),
    )
        .prop_map(|(op, values, junk)| {
            let (name, fields) = OPS[op];
            let mut s = format!("{{\"op\":\"{name}\"");
            for (field, v) in fields.iter().zip(values) {
                if carries(name, field, v.draw) {
                    s.push_str(&format!(",\"{field}\":{}", v.value(field)));
                }
            }
            if let Some((f, v)) = junk {
                let field = ["junk", "nsid", "ns", "lba", "count", "zone"][f];
                s.push_str(&format!(",\"{field}\":{v}"));
            }
            s.push('}');
            s
        })
}

#[derive(Debug, Clone)]
pub(super) enum TraceEdit {
    Number { which: usize, with: String },
    Insert { at: usize, line: String },
    Delete { which: usize },
    Truncate { at: usize },
    Byte { at: usize, byte: u8 },
}

pub(super) fn trace_edit() -> impl Strategy<Value = TraceEdit> {
    prop_oneof![
        6 => (any::<usize>(), json_value()).prop_map(|(which, with)| TraceEdit::Number { which, with }),
        3 => (any::<usize>(), trace_line()).prop_map(|(at, line)| TraceEdit::Insert { at, line }),
        1 => any::<usize>().prop_map(|which| TraceEdit::Delete { which }),
        1 => any::<usize>().prop_map(|at| TraceEdit::Truncate { at }),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| TraceEdit::Byte { at, byte }),
    ]
}

pub(super) fn edit_trace(text: &str, e: &TraceEdit) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match e {
        TraceEdit::Number { which, with } => {
            let spans = integer_spans(text);
            if spans.is_empty() {
                return text.to_string();
            }
            let (a, b) = spans[which % spans.len()];
            format!("{}{}{}", &text[..a], with, &text[b..])
        }
        TraceEdit::Insert { at, line } => {
            let mut l = lines.clone();
            l.insert(at % (lines.len() + 1), line);
            l.join("\n")
        }
        TraceEdit::Delete { which } => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.remove(which % lines.len());
            }
            l.join("\n")
        }
        TraceEdit::Truncate { at } => {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text[..at].to_string()
        }
        TraceEdit::Byte { at, byte } => {
            let mut b = text.as_bytes().to_vec();
            if !b.is_empty() {
                let i = at % b.len();
                b[i] = *byte;
            }
            String::from_utf8_lossy(&b).into_owned()
        }
    }
}

/// A one-zone device whose zone is larger than 2^32 LBAs (a valid profile).
pub(super) fn big_zone_profile() -> Profile {
    Profile::builtin("tiny")
        .unwrap()
        .with_overrides(&[
            ("namespace.0.lba_bytes".into(), "512".into()),
            ("namespace.0.zone_count".into(), "1".into()),
            (
                "namespace.0.zone_size_lbas".into(),
                (1u64 << 33).to_string(),
            ),
            (
                "namespace.0.zone_capacity_lbas".into(),
                (1u64 << 33).to_string(),
            ),
        ])
        .unwrap()
}

/// Parses `text`; when it parses, replays it on `profile`. Errors are values.
pub(super) fn replay(text: &str, profile: &Profile, seed: u64) -> Result<(), TestCaseError> {
    let commands = match parse_trace(text) {
        Err(e) => {
            prop_assert!(!e.to_string().is_empty());
            return Ok(());
        }
        Ok(c) => c,
    };
    let mut rt = Runtime::new(seed);
    let ctrl = test_ctrl::open(
        &rt.handle(),
        profile.clone(),
        StoreKind::Memory,
        HostStack::IoUringMqDeadline,
    );
    match rt.block_on(run_trace(&ctrl, &commands)) {
        Err(e) => prop_assert!(!e.to_string().is_empty()),
        Ok(results) => {
            prop_assert_eq!(results.len(), commands.len());
            for r in &results {
                prop_assert!(!r.status.name.is_empty());
            }
        }
    }
    Ok(())
}

/// 4. Random and damaged traces: parse errors name the line; what parses
///    replays (on the tiny device and on one with a 2^33-LBA zone).
#[test]
pub(super) fn random_and_mutated_traces_never_panic() {
    let profiles = [Profile::builtin("tiny").unwrap(), big_zone_profile()];
    check(
        "random text",
        128,
        ("(?s).{0,200}", any::<u64>()),
        |(text, seed)| replay(&text, &profiles[0], seed),
    );
    check(
        "random commands",
        512,
        (
            prop::collection::vec(trace_line(), 0..24),
            any::<u64>(),
            0..2usize,
        ),
        |(lines, seed, p)| replay(&lines.join("\n"), &profiles[p], seed),
    );
    check(
        "mutated examples",
        256,
        (
            0..EXAMPLE_TRACES.len(),
            prop::collection::vec(trace_edit(), 1..5),
            any::<u64>(),
            0..2usize,
        ),
        |(which, edits, seed, p)| {
            let mut text = EXAMPLE_TRACES[which].to_string();
            for e in &edits {
                text = edit_trace(&text, e);
            }
            replay(&text, &profiles[p], seed)
        },
    );
}
