//! Property 3: randomly mutated profiles and `--set` overrides.

use super::*;

/// Spans of integer literals outside strings and comments.
pub(super) fn integer_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let (mut in_string, mut in_comment) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_comment {
            in_comment = c != b'\n';
        } else if in_string {
            in_string = c != b'"';
        } else if c == b'#' {
            in_comment = true;
        } else if c == b'"' {
            in_string = true;
        } else if c.is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            spans.push((start, i));
            continue;
        }
        i += 1;
    }
    spans
}

/// A hostile replacement for a value.
pub(super) fn junk_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<u64>().prop_map(|v| v.to_string()),
        2 => (0..20u32).prop_map(|v| v.to_string()),
        2 => (0..64u32).prop_map(|s| (1u64 << s).to_string()),
        1 => (1..40u32).prop_map(|s| ((1u64 << s) + 1).to_string()),
        1 => Just("0".to_string()),
        1 => Just("1".to_string()),
        1 => any::<i64>().prop_map(|v| (-(v.unsigned_abs() as i128)).to_string()),
        1 => Just("-1".to_string()),
        1 => Just(i64::MAX.to_string()),
        1 => Just(u32::MAX.to_string()),
        1 => Just((u32::MAX as u64 + 1).to_string()),
        1 => Just("1.5".to_string()),
        1 => Just("1e300".to_string()),
        1 => Just("nan".to_string()),
        1 => Just("-inf".to_string()),
        1 => Just("\"x\"".to_string()),
        1 => Just("true".to_string()),
        1 => Just("[1, 2]".to_string()),
        1 => Just("[]".to_string()),
        1 => Just("{ a = 1 }".to_string()),
        1 => Just("".to_string()),
        1 => Just("99999999999999999999999".to_string()),
        1 => Just("0x10".to_string()),
    ]
}

#[derive(Debug, Clone)]
pub(super) enum Mutation {
    ReplaceInteger { which: usize, with: String },
    DeleteLine { which: usize },
    InsertLine { at: usize, line: String },
    DuplicateLine { which: usize },
    ReplaceWord { which: usize, with: String },
}

pub(super) fn mutation() -> impl Strategy<Value = Mutation> {
    let junk_line = prop_oneof![
        Just("junk_key = 5".to_string()),
        Just("[junk]".to_string()),
        Just("[[namespace]]".to_string()),
        Just("kind = \"conventional\"".to_string()),
        Just("kind = \"zoned\"".to_string()),
        Just("[namespace.zrwa]".to_string()),
        Just("zone_count = 1".to_string()),
        Just("= = =".to_string()),
        junk_value().prop_map(|v| format!("zone_size_lbas = {v}")),
        junk_value().prop_map(|v| format!("max_open_zones = {v}")),
    ];
    prop_oneof![
        8 => (any::<usize>(), junk_value()).prop_map(|(which, with)| Mutation::ReplaceInteger { which, with }),
        2 => any::<usize>().prop_map(|which| Mutation::DeleteLine { which }),
        2 => (any::<usize>(), junk_line).prop_map(|(at, line)| Mutation::InsertLine { at, line }),
        1 => any::<usize>().prop_map(|which| Mutation::DuplicateLine { which }),
        1 => (
            any::<usize>(),
            prop_oneof![
                Just("\"discard\"".to_string()),
                Just("\"drop\"".to_string()),
                Just("\"dram\"".to_string()),
                Just("\"flash\"".to_string()),
                Just("\"write-buffer\"".to_string()),
                Just("\"bogus\"".to_string()),
                Just("false".to_string()),
            ]
        )
            .prop_map(|(which, with)| Mutation::ReplaceWord { which, with }),
    ]
}

pub(super) fn mutate(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match m {
        Mutation::ReplaceInteger { which, with } => {
            let spans = integer_spans(text);
            if spans.is_empty() {
                return text.to_string();
            }
            let (a, b) = spans[which % spans.len()];
            format!("{}{}{}", &text[..a], with, &text[b..])
        }
        Mutation::DeleteLine { which } => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.remove(which % lines.len());
            }
            l.join("\n")
        }
        Mutation::InsertLine { at, line } => {
            let mut l = lines.clone();
            l.insert(at % (lines.len() + 1), line);
            l.join("\n")
        }
        Mutation::DuplicateLine { which } => {
            let mut l = lines.clone();
            if !l.is_empty() {
                let i = which % lines.len();
                l.insert(i, lines[i]);
            }
            l.join("\n")
        }
        Mutation::ReplaceWord { which, with } => {
            // Replace the value of a `key = "word"` or `key = bool` line.
            let candidates: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| {
                    let v = l.split('=').nth(1).map(str::trim).unwrap_or("");
                    v.starts_with('"') || v == "true" || v == "false"
                })
                .map(|(i, _)| i)
                .collect();
            if candidates.is_empty() {
                return text.to_string();
            }
            let i = candidates[which % candidates.len()];
            let key = lines[i].split('=').next().unwrap_or("");
            let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            l[i] = format!("{key}= {with}");
            l.join("\n")
        }
    }
}

/// Zones a ZoneSet would allocate for the profile (skip giant ones: memory, not panics).
pub(super) fn total_zones(p: &Profile) -> u64 {
    p.namespaces
        .iter()
        .map(|n| match n {
            NamespaceProfile::Zoned(z) => z.zone_count as u64,
            NamespaceProfile::Conventional(_) => 0,
        })
        .sum()
}

/// A few random commands on every namespace of a controller built from `profile`.
pub(super) fn exercise_profile(
    profile: &Profile,
    seed: u64,
    stack: HostStack,
    ops: &[Op],
) -> Result<(), String> {
    let mut rt = Runtime::new(seed);
    let ctrl = match Controller::new(
        &rt.handle(),
        profile.clone(),
        ControllerOptions {
            store: StoreKind::None,
            host_stack: stack,
        },
    ) {
        Ok(c) => c,
        Err(e) if !e.to_string().is_empty() => return Ok(()),
        Err(e) => return Err(format!("empty error text: {e:?}")),
    };
    for nsid in 1..=ctrl.namespace_count() {
        if let Some(dev) = ctrl.zoned(nsid) {
            ctrl.power_on();
            let tasks: Vec<Vec<Op>> = ops.chunks(5).map(|c| c.to_vec()).collect();
            run_concurrently(&mut rt, &ctrl, &dev, &tasks)
                .map_err(|e| format!("nsid {nsid}: {e}"))?;
            ctrl.power_on();
            check_zones(&mut rt, &dev).map_err(|e| format!("nsid {nsid}: {e}"))?;
        } else if let Some(dev) = ctrl.conventional(nsid) {
            ctrl.power_on();
            let lb = dev.lba_bytes() as usize;
            let cap = dev.capacity_lbas();
            let dev2 = dev.clone();
            let ops: Vec<(u64, usize)> = ops
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let slba = match o {
                        Op::Write {
                            lba: Lba::Raw(x), ..
                        } => *x,
                        _ => (i as u64 * 7919) % cap.saturating_add(3),
                    };
                    (slba, 1 + i % 4)
                })
                .collect();
            let errors = rt.block_on(async move {
                let mut errors = Vec::new();
                for (i, (slba, nlb)) in ops.into_iter().enumerate() {
                    let mut buf = vec![1u8; nlb * lb];
                    let r = match i % 4 {
                        0 => dev2.write(slba, &buf, IoFlags::NONE).await,
                        1 => dev2.read(slba, &mut buf).await,
                        2 => dev2.discard(slba, nlb as u64).await,
                        _ => dev2.flush().await,
                    };
                    if let Err(e) = r {
                        errors.push(e);
                    }
                }
                errors
            });
            for e in errors {
                if e.injected || e.to_string().is_empty() {
                    return Err(format!("conventional nsid {nsid}: {e:?}"));
                }
            }
        }
    }
    Ok(())
}

/// 3a. Built-in profiles with random damage: parse errors are values; what
///     parses builds a controller that survives random commands.
#[test]
pub(super) fn mutated_profiles_never_panic() {
    for name in Profile::builtin_names() {
        let text = Profile::builtin_toml(name).unwrap();
        check(
            &format!("profile {name}"),
            100,
            (
                prop::collection::vec(mutation(), 1..4),
                any::<u64>(),
                0..3usize,
                prop::collection::vec(op(), 0..20),
            ),
            |(mutations, seed, stack, ops)| {
                let mut t = text.to_string();
                for m in &mutations {
                    t = mutate(&t, m);
                }
                match Profile::from_toml(&t, "mutated") {
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                    Ok(p) => {
                        // What parses serializes, and reads back the same.
                        let again = Profile::from_toml(&p.to_toml(), "round trip")
                            .map_err(|e| violation(format!("round trip: {e}")))?;
                        prop_assert_eq!(again.to_toml(), p.to_toml());
                        if total_zones(&p) <= 100_000 {
                            exercise_profile(&p, seed, STACKS[stack], &ops).map_err(violation)?;
                        }
                    }
                }
                Ok(())
            },
        );
    }
}

/// Every leaf key path of a profile, as `--set` takes them.
pub(super) fn leaf_paths(v: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                leaf_paths(v, &join(k), out);
            }
        }
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                leaf_paths(v, &join(&i.to_string()), out);
            }
            out.push(prefix.to_string());
        }
        _ => out.push(prefix.to_string()),
    }
}

pub(super) fn override_value() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => junk_value(),
        1 => Just("{ size_lbas = 8, flush_granularity_lbas = 4, resources = 2 }".to_string()),
        1 => Just("{ size_lbas = 0 }".to_string()),
        1 => Just("discard".to_string()),
        1 => Just("keep".to_string()),
        1 => Just("dram".to_string()),
        1 => Just("=[".to_string()),
        1 => Just("\"unterminated".to_string()),
        1 => Just("[1, \"a\"]".to_string()),
        1 => "[ -~]{0,12}",
    ]
}

/// 3b. `Profile::with_overrides` with random keys and values.
#[test]
pub(super) fn random_overrides_never_panic() {
    for name in Profile::builtin_names() {
        let base = Profile::builtin(name).unwrap();
        let mut paths = Vec::new();
        leaf_paths(&toml::Value::try_from(&base).unwrap(), "", &mut paths);
        paths.extend(
            [
                "",
                ".",
                "a..b",
                "namespace",
                "namespace.9.zone_count",
                "namespace.-1.zone_count",
                "namespace.x.zone_count",
                "namespace.0",
                "namespace.0.zrwa",
                "namespace.0.zrwa.size_lbas",
                "namespace.0.kind",
                "namespace.0.zone_count.x",
                "namespace.18446744073709551616.zone_count",
                "timing",
                "timing.read_page_ns.0",
                "timing.read_page_ns.99",
                "timing.zrwa",
                "zrwa",
                "power_loss",
                "name.x",
                "nonexistent",
            ]
            .map(String::from),
        );
        let paths = Rc::new(paths);
        check(
            &format!("overrides of {name}"),
            150,
            (
                prop::collection::vec((any::<usize>(), override_value()), 1..4),
                any::<u64>(),
                prop::collection::vec(op(), 0..12),
            ),
            |(sets, seed, ops)| {
                let sets: Vec<(String, String)> = sets
                    .into_iter()
                    .map(|(i, v)| (paths[i % paths.len()].clone(), v))
                    .collect();
                match base.with_overrides(&sets) {
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                    Ok(p) => {
                        if total_zones(&p) <= 100_000 {
                            exercise_profile(&p, seed, HostStack::IoUringMqDeadline, &ops)
                                .map_err(violation)?;
                        }
                    }
                }
                Ok(())
            },
        );
    }
}
