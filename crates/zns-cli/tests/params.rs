//! Each run's parameters are defined once, in its library struct, and every
//! front end takes every one of them: a field added to
//! `zns_raid::crash_params::CrashParams` or `zns_cache::CacheRunParams` is
//! a flag of `zns raid crashtest` / `zns cache run` (clap derives them), a
//! key of a sweep point and so a keyword argument of the Python package
//! (`znskit.crashtest(**params)` and `znskit.cache_run(**params)` hand
//! their keywords to the sweep's `run_params`, which serde fills the same
//! struct from), with no other edit. These tests enumerate each struct's
//! fields (serde's names) and check each against all three.

use std::process::Command;

use serde::Serialize;
use serde_json::{Map, Value};
use zns_cache::CacheRunParams;
use zns_raid::crash_params::CrashParams;
use zns_sweep::point::check_param_name;
use zns_sweep::{run_params, RunKind};

/// The struct's fields (serde's names) and their defaults.
fn fields<T: Serialize + Default>() -> Map<String, Value> {
    match serde_json::to_value(T::default()).unwrap() {
        Value::Object(m) => m,
        other => panic!("{other}"),
    }
}

/// A value a parameter takes, as a flag's argument (`None`: a switch).
fn sample(name: &str, default: &Value) -> Option<String> {
    match default {
        Value::Bool(_) => None,
        Value::Null => Some(
            match name {
                "profile" | "host_stack" => "none-such-but-text",
                "region" | "io_size" => "64k",
                "duration" => "1s",
                _ => "1",
            }
            .to_string(),
        ),
        Value::Array(_) => Some("namespace.0.zone_count=64".into()),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The same value as a sweep key's (and a Python keyword's) value.
fn key_value(default: &Value, value: Option<String>) -> Value {
    match (default, value) {
        (_, None) => Value::Bool(true),
        (Value::Array(_), Some(v)) => Value::Array(vec![Value::String(v)]),
        (d, Some(_)) if d.is_number() => d.clone(),
        (_, Some(v)) => v.parse::<u64>().map_or(Value::String(v), Value::from),
    }
}

/// Checks every field of a run's struct: `zns SUBCOMMAND --NAME [VALUE]`
/// parses, the sweep knows NAME, and a point with NAME reads (`stop` is a
/// key that then stops the point before anything runs long).
fn check_every_field(
    subcommand: &[&str],
    kind: RunKind,
    fields: &Map<String, Value>,
    names: &[String],
    stop: impl Fn(&str) -> (String, Value),
) {
    assert_eq!(names.len(), fields.len());
    for name in names {
        let default = &fields[name];
        let value = sample(name, default);
        let flag = format!("--{}", name.replace('_', "-"));
        let mut args: Vec<&str> = subcommand.to_vec();
        args.push(&flag);
        if let Some(v) = &value {
            args.push(v);
        }
        // (clap stops at --help once the arguments before it read; an
        // unknown flag or a value of the wrong type is an error)
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
        check_param_name(kind, name).unwrap();
        let mut params = Map::new();
        params.insert(name.clone(), key_value(default, value));
        let (k, v) = stop(name);
        params.insert(k, v);
        if let Err(e) = run_params(kind, &params, None, None) {
            assert!(
                !e.contains("takes") && !e.contains(&format!("{name} = ")),
                "{name}: {e}"
            );
        }
    }
}

#[test]
fn every_crash_test_parameter_is_a_flag_a_sweep_key_and_a_python_keyword() {
    let names = CrashParams::names();
    assert!(names.len() >= 10, "{names:?}");
    check_every_field(
        &["raid", "crashtest"],
        RunKind::Crashtest,
        &fields::<CrashParams>(),
        &names,
        // no trial runs: the shape check refuses 0 trials, after the
        // parameters were read
        |name| match name {
            "trials" => ("members".into(), Value::from(2)),
            _ => ("trials".into(), Value::from(0)),
        },
    );
}

#[test]
fn every_cache_run_parameter_is_a_flag_a_sweep_key_and_a_python_keyword() {
    let names = CacheRunParams::names();
    assert!(names.len() >= 30, "{names:?}");
    check_every_field(
        &["cache", "run"],
        RunKind::Cache,
        &fields::<CacheRunParams>(),
        &names,
        // nothing runs: a policy (or a write mode) that does not read stops
        // the point once the parameters were read
        |name| match name {
            "policy" => ("zns_write".into(), Value::from("none-such")),
            _ => ("policy".into(), Value::from("none-such")),
        },
    );
}
