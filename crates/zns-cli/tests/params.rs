//! Each run's parameters are defined once, in its library struct, and every
//! front end takes every one of them: a field added to
//! `zns_raid::crash_params::CrashParams` is a flag of `zns raid crashtest`
//! (clap derives it), a key of a sweep point and so a keyword argument of
//! the Python package (`znskit.crashtest(**params)` hands its keywords to
//! the sweep's `run_params`, which serde fills the same struct from),
//! with no other edit. This test enumerates the struct's fields (serde's
//! names) and checks each against all three.

use std::process::Command;

use serde_json::{Map, Value};
use zns_raid::crash_params::CrashParams;
use zns_sweep::point::check_param_name;
use zns_sweep::{run_params, RunKind};

/// A value each parameter takes (its default when it has one).
fn sample(name: &str, default: &Value) -> Option<String> {
    match default {
        Value::Bool(_) => None,
        Value::Null => Some(
            match name {
                "profile" => "zn540",
                _ => "1",
            }
            .to_string(),
        ),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[test]
fn every_crash_test_parameter_is_a_flag_a_sweep_key_and_a_python_keyword() {
    let defaults = match serde_json::to_value(CrashParams::default()).unwrap() {
        Value::Object(m) => m,
        other => panic!("{other}"),
    };
    let names = CrashParams::names();
    assert_eq!(names.len(), defaults.len());
    assert!(names.len() >= 10, "{names:?}");
    for name in &names {
        let default = &defaults[name];
        let value = sample(name, default);
        // the CLI: `--NAME [VALUE]` parses (clap stops at --help once the
        // arguments before it are read; an unknown flag is an error)
        let flag = format!("--{}", name.replace('_', "-"));
        let mut args = vec!["raid", "crashtest", flag.as_str()];
        if let Some(v) = &value {
            args.push(v);
        }
        args.push("--help");
        let o = Command::new(env!("CARGO_BIN_EXE_zns"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "zns {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
        // the sweep (and Python): the key is known, and its value reads
        check_param_name(RunKind::Crashtest, name).unwrap();
        let v = match value {
            None => Value::Bool(true),
            Some(_) if default.is_number() => default.clone(),
            Some(v) => v.parse::<u64>().map_or(Value::String(v), Value::from),
        };
        let mut params = Map::new();
        params.insert(name.clone(), v);
        if name != "trials" {
            // (no trial runs: the shape check refuses 0 trials, after the
            // parameters were read)
            params.insert("trials".into(), Value::from(0));
        }
        match run_params(RunKind::Crashtest, &params, None, None) {
            Ok(_) => {}
            Err(e) => assert!(
                !e.contains("unknown field") && !e.contains("takes") && !e.contains("invalid"),
                "{name}: {e}"
            ),
        }
    }
}
