//! zns-py is the native half of the Python package `znskit`
//! (`znskit._native`, built by maturin; the Python half is in `python/`):
//! thin calls into the libraries — a fio job through zns-bench's runner,
//! the fidelity suite, a crash-test campaign, a cache run or a repro
//! through zns-sweep's point runner, sweeps through zns-sweep's engines,
//! and a device opened by zns-target that takes zone commands one at a
//! time in virtual time. Reports cross the boundary as JSON text (the
//! Python side parses it into dicts and DataFrames). Every long run
//! releases the GIL: it builds its own runtime inside the call and holds
//! no Python object. Errors are exceptions: `ZnsError` for bad input and
//! failed runs, its subclass `NvmeError` for a command the device
//! rejected, carrying the NVMe status (name, SCT, SC, injected).

use std::path::{Path, PathBuf};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zns_core::{IoFlags, ReportFilter, ZoneAction, ZoneSendCmd, ZonedDevice};
use zns_sim::Runtime;
use zns_sweep::local::{self, Options};
use zns_sweep::{RunKind, Sweep};

// declared in `znskit` (their __module__), where users catch them: tracebacks
// and pickles (Ray) name znskit.ZnsError, not the native module
create_exception!(
    znskit,
    ZnsError,
    PyException,
    "A znskit error: bad input (job, parameters, sweep file) or a failed run."
);
create_exception!(
    znskit,
    NvmeError,
    ZnsError,
    "A command the device rejected; `status`, `sct`, `sc`, `injected` say how."
);

fn zns_err(e: impl std::fmt::Display) -> PyErr {
    ZnsError::new_err(e.to_string())
}

/// An `NvmeError` exception carrying the status of `e`.
fn nvme_err(py: Python<'_>, what: &str, e: zns_core::NvmeError) -> PyErr {
    let s = e.status;
    // the CLI's and the libraries' format: `Zone Is Full (SCT 1h SC B9h)`
    let err = NvmeError::new_err(format!("{what}: {e}"));
    let v = err.value(py);
    let _ = v.setattr("status", s.name());
    let _ = v.setattr("sct", s.sct());
    let _ = v.setattr("sc", s.sc());
    let _ = v.setattr("injected", e.injected);
    err
}

fn json_text(v: &serde_json::Value) -> PyResult<String> {
    serde_json::to_string(v).map_err(zns_err)
}

/// Runs fio job texts in virtual time, one file after another on the same
/// devices (as `zns bench FILE FILE…`); fio's JSON (json+ with `plus`).
/// `names` name the texts in error messages.
#[pyfunction]
#[pyo3(name = "bench", signature = (job_texts, names, seed = 0, plus = false))]
fn bench_job(
    py: Python<'_>,
    job_texts: Vec<String>,
    names: Vec<String>,
    seed: u64,
    plus: bool,
) -> PyResult<String> {
    if job_texts.is_empty() || job_texts.len() != names.len() {
        return Err(zns_err(
            "bench: one name per job text, and at least one job text",
        ));
    }
    let mut files = Vec::new();
    for (text, name) in job_texts.iter().zip(&names) {
        files.push(zns_bench::job::parse_job_file(text, name).map_err(zns_err)?);
    }
    let specs = zns_bench::job::chain_files(files);
    for f in specs.iter().filter_map(|j| j.filename.as_deref()) {
        if zns_target::is_real_device(f) {
            return Err(zns_err(format!(
                "filename={f}: the Python package runs emulated devices only (use `zns bench` for real ones)"
            )));
        }
    }
    let report = py.allow_threads(|| zns_bench::run::run_jobs(&specs, seed));
    let report = match report {
        Ok(r) => r,
        Err(zns_bench::run::RunError::Io { job, err }) => {
            return Err(nvme_err(py, &format!("job {job}"), err))
        }
        Err(e) => return Err(zns_err(e)),
    };
    // a job that ended on a command the device rejected: NvmeError with
    // its status (the first such job; the others are in the message)
    let failures = report.failures();
    let rejected = report
        .jobs
        .iter()
        .find_map(|j| match j.error.as_ref().map(|f| &f.cause) {
            Some(zns_bench::run::FailureCause::Io(err)) => Some((j.name.clone(), *err)),
            _ => None,
        });
    match rejected {
        Some((job, err)) if failures.len() == 1 => {
            return Err(nvme_err(py, &format!("job {job}"), err))
        }
        Some((_, err)) => return Err(nvme_err(py, &failures.join("; "), err)),
        None if !failures.is_empty() => return Err(zns_err(failures.join("; "))),
        None => {}
    }
    let doc = if plus {
        report.to_fio_json_plus()
    } else {
        report.to_fio_json()
    };
    json_text(&doc)
}

/// Runs one kind of run (`crashtest`, `cache`, `repro-zraid`, `bench`)
/// with JSON parameters; the whole report as JSON.
#[pyfunction]
#[pyo3(signature = (kind, params_json, job_text = None, files_dir = None))]
fn run(
    py: Python<'_>,
    kind: &str,
    params_json: &str,
    job_text: Option<String>,
    files_dir: Option<PathBuf>,
) -> PyResult<String> {
    let kind = RunKind::parse(kind).map_err(zns_err)?;
    let params: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(params_json).map_err(|e| zns_err(format!("parameters: {e}")))?;
    let job = job_text.map(|text| zns_sweep::point::JobText {
        name: "job".into(),
        text,
    });
    let r = py
        .allow_threads(|| zns_sweep::run_params(kind, &params, job.as_ref(), files_dir.as_deref()));
    json_text(&r.map_err(zns_err)?)
}

/// The fidelity suite (`zns fidelity`); its JSON report.
#[pyfunction]
#[pyo3(signature = (filter = None, seed = 1, experiments_dir = None, plots_dir = None))]
fn fidelity(
    py: Python<'_>,
    filter: Option<String>,
    seed: u64,
    experiments_dir: Option<PathBuf>,
    plots_dir: Option<PathBuf>,
) -> PyResult<String> {
    use zns_bench::fidelity::{self, FidelityOptions};
    let opts = FidelityOptions {
        experiments_dir: experiments_dir.unwrap_or_else(fidelity::default_experiments_dir),
        filter,
        curves: plots_dir.is_some(),
        plots_dir,
        seed,
    };
    let r = py.allow_threads(|| fidelity::run_fidelity(&opts, &mut |_, _, _| {}));
    json_text(&r.map_err(zns_err)?.to_json())
}

fn load_sweep(spec: &Path) -> PyResult<Sweep> {
    Sweep::load(spec).map_err(zns_err)
}

/// A sweep file's points and what its tasks ask for, as JSON.
#[pyfunction]
fn sweep_points(spec: PathBuf) -> PyResult<String> {
    let s = load_sweep(&spec)?;
    let points = s.points().map_err(zns_err)?;
    json_text(&serde_json::json!({
        "run": s.kind.name(),
        "param_names": s.param_names(),
        "resources": s.resources,
        "points": points,
    }))
}

/// The points of `spec` that need running in `out` (their indices);
/// creates `out/points`.
#[pyfunction]
#[pyo3(signature = (spec, out, resume = false, retry_failed = false))]
fn sweep_pending(
    spec: PathBuf,
    out: PathBuf,
    resume: bool,
    retry_failed: bool,
) -> PyResult<Vec<usize>> {
    let s = load_sweep(&spec)?;
    let points = s.points().map_err(zns_err)?;
    let todo = local::plan(&points, &out, resume, retry_failed).map_err(zns_err)?;
    Ok(todo.iter().map(|p| p.index).collect())
}

/// The host clock the sweeps' host-time figures are read on
/// (`zns_sweep::HostClock`): this module is the OS-facing side, as the
/// `zns` binary is; nothing a simulation computes depends on it.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn host_clock() -> impl Fn() -> f64 + Sync {
    let t0 = std::time::Instant::now();
    move || t0.elapsed().as_secs_f64()
}

/// Runs one point (JSON, as `sweep_points` gives it); its record as JSON.
#[pyfunction]
#[pyo3(signature = (point_json, files_dir = None))]
fn sweep_run_point(
    py: Python<'_>,
    point_json: &str,
    files_dir: Option<PathBuf>,
) -> PyResult<String> {
    let p: zns_sweep::Point =
        serde_json::from_str(point_json).map_err(|e| zns_err(format!("point: {e}")))?;
    let clock = host_clock();
    let rec = py.allow_threads(|| zns_sweep::run_point(&p, files_dir.as_deref(), &clock));
    serde_json::to_string(&rec).map_err(zns_err)
}

/// Writes a record (JSON) into `out/points/`.
#[pyfunction]
#[pyo3(signature = (out, record_json, writer_tag = "py"))]
fn sweep_write_record(out: PathBuf, record_json: &str, writer_tag: &str) -> PyResult<()> {
    let r: zns_sweep::Record =
        serde_json::from_str(record_json).map_err(|e| zns_err(format!("record: {e}")))?;
    zns_sweep::store::write_record(&out, &r, writer_tag).map_err(zns_err)
}

/// Merges the records of `out` into results.csv / results.parquet and
/// writes `summary_json` (with the counts filled in) as summary.json;
/// the table as JSON {columns, rows} and the summary.
#[pyfunction]
fn sweep_finish(spec: PathBuf, out: PathBuf, summary_json: &str) -> PyResult<(String, String)> {
    let s = load_sweep(&spec)?;
    let points = s.points().map_err(zns_err)?;
    let (counts, table) = local::finish(&s, &points, &out).map_err(zns_err)?;
    let given: local::Summary = serde_json::from_str(summary_json).map_err(zns_err)?;
    let summary = local::Summary {
        points: counts.points,
        ok: counts.ok,
        failed: counts.failed,
        ..given
    };
    local::write_summary(&out, &summary).map_err(zns_err)?;
    Ok((
        table_json(&table)?,
        serde_json::to_string(&summary).map_err(zns_err)?,
    ))
}

fn table_json(t: &zns_sweep::table::Table) -> PyResult<String> {
    json_text(&serde_json::json!({"columns": t.columns, "rows": t.rows}))
}

/// The local engine (`zns sweep --engine local`): (table JSON, summary JSON).
#[pyfunction]
#[pyo3(signature = (spec, out, workers = None, resume = false, retry_failed = false))]
fn sweep_local(
    py: Python<'_>,
    spec: PathBuf,
    out: PathBuf,
    workers: Option<usize>,
    resume: bool,
    retry_failed: bool,
) -> PyResult<(String, String)> {
    let s = load_sweep(&spec)?;
    if workers == Some(0) {
        return Err(zns_err("workers=0: at least one"));
    }
    let opts = Options {
        workers: workers.unwrap_or_else(local::available_workers),
        resume,
        retry_failed,
        stop: None,
    };
    let (summary, table) = py
        .allow_threads(|| local::run(&s, &out, &opts, &host_clock(), &mut |_, _, _| {}))
        .map_err(zns_err)?;
    Ok((
        table_json(&table)?,
        serde_json::to_string(&summary).map_err(zns_err)?,
    ))
}

/// Draws a table (JSON {columns, rows}) in the project's style: `y`
/// against `x`, one line per value of `by`; PNG at `png`, CSV beside it.
#[pyfunction]
#[pyo3(signature = (table_json, x, y, png, by = None, title = None))]
fn plot(
    table_json: &str,
    x: String,
    y: String,
    png: PathBuf,
    by: Option<String>,
    title: Option<String>,
) -> PyResult<()> {
    #[derive(serde::Deserialize)]
    struct T {
        columns: Vec<String>,
        rows: Vec<Vec<serde_json::Value>>,
    }
    let t: T = serde_json::from_str(table_json).map_err(|e| zns_err(format!("table: {e}")))?;
    if let Some(r) = t.rows.iter().find(|r| r.len() != t.columns.len()) {
        return Err(zns_err(format!(
            "table: a row of {} cells for {} columns",
            r.len(),
            t.columns.len()
        )));
    }
    let table = zns_sweep::table::Table {
        columns: t.columns,
        rows: t.rows,
    };
    let spec = zns_sweep::plot::PlotSpec { x, y, by, title };
    zns_sweep::plot::plot(&table, &spec, &png).map_err(zns_err)
}

/// A device opened by name (a profile such as `zn540` or `tiny`, a profile
/// TOML, an image, `raid:…`) that takes zone commands one at a time; each
/// runs to completion and advances the device's virtual clock.
#[pyclass(unsendable, module = "znskit._native")]
struct Device {
    rt: Runtime,
    target: zns_target::Target,
    // keeps the controllers alive
    _opened: zns_target::OpenedDevice,
    name: String,
    last_latency_ns: u64,
}

impl Device {
    /// The runtime, the device and the last latency, borrowed apart.
    fn parts(&mut self) -> PyResult<(&mut Runtime, &dyn ZonedDevice, &mut u64)> {
        let Device {
            rt,
            target,
            last_latency_ns,
            name,
            ..
        } = self;
        let dev = target
            .zoned()
            .ok_or_else(|| zns_err(format!("{name}: not a zoned namespace")))?;
        Ok((rt, dev, last_latency_ns))
    }

    fn zoned(&self) -> PyResult<&dyn ZonedDevice> {
        self.target
            .zoned()
            .ok_or_else(|| zns_err(format!("{}: not a zoned namespace", self.name)))
    }

    fn cfg(&self) -> PyResult<zns_core::ZonedConfig> {
        Ok(self.zoned()?.config().clone())
    }

    fn zslba(&self, zone: u64) -> PyResult<u64> {
        let c = self.cfg()?;
        if zone >= u64::from(c.zone_count) {
            return Err(zns_err(format!(
                "zone {zone}: the device has zones 0 to {}",
                c.zone_count.saturating_sub(1)
            )));
        }
        Ok(zone * c.zone_size_lbas)
    }

    /// The zone a close/finish/reset names: `zone`, or all of them (its
    /// start LBA is then 0); neither or both is an error, not zone 0.
    fn zone_or_all(&self, what: &str, zone: Option<u64>, all: bool) -> PyResult<u64> {
        match (zone, all) {
            (Some(z), false) => self.zslba(z),
            (None, true) => Ok(0),
            (Some(_), true) => Err(zns_err(format!("{what}: a zone or all=True, not both"))),
            (None, false) => Err(zns_err(format!(
                "{what}: which zone? give zone=N, or all=True for every zone"
            ))),
        }
    }

    fn send(&mut self, py: Python<'_>, action: ZoneAction, slba: u64, all: bool) -> PyResult<u64> {
        let cmd = ZoneSendCmd {
            action,
            slba,
            select_all: all,
        };
        let (rt, dev, lat) = self.parts()?;
        let start = rt.now_ns();
        let r = rt.block_on(dev.zone_send(cmd));
        *lat = rt.now_ns() - start;
        r.map_err(|e| nvme_err(py, action.name(), e))?;
        Ok(*lat)
    }
}

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (name = "tiny", seed = 0, nsid = None))]
    fn new(name: &str, seed: u64, nsid: Option<u32>) -> PyResult<Device> {
        let spec = zns_target::TargetSpec::parse(name).map_err(zns_err)?;
        if zns_target::is_real_device(name) {
            return Err(zns_err(format!("{name}: emulated devices only")));
        }
        let mut rt = Runtime::new(seed);
        let opts = zns_target::OpenOptions {
            store: zns_target::StoreKind::Memory,
            ..zns_target::OpenOptions::default()
        };
        let opened = zns_target::open(&mut rt, &spec, &opts).map_err(zns_err)?;
        let target = opened.target(name, nsid).map_err(zns_err)?;
        if target.zoned().is_none() {
            return Err(zns_err(format!("{name}: not a zoned namespace")));
        }
        Ok(Device {
            rt,
            target,
            _opened: opened,
            name: name.to_string(),
            last_latency_ns: 0,
        })
    }

    /// The device's virtual clock, ns.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.rt.now_ns()
    }

    /// Virtual time the last command took, ns.
    #[getter]
    fn last_latency_ns(&self) -> u64 {
        self.last_latency_ns
    }

    /// Geometry and limits: lba_bytes, zone_count, zone_size_lbas,
    /// zone_capacity_lbas, max_open_zones, max_active_zones, max_transfer_lbas.
    fn geometry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.cfg()?;
        let d = PyDict::new(py);
        d.set_item("lba_bytes", c.lba_bytes)?;
        d.set_item("zone_count", c.zone_count)?;
        d.set_item("zone_size_lbas", c.zone_size_lbas)?;
        d.set_item("zone_capacity_lbas", c.zone_capacity_lbas)?;
        d.set_item("max_open_zones", c.max_open_zones)?;
        d.set_item("max_active_zones", c.max_active_zones)?;
        d.set_item("max_transfer_lbas", c.max_transfer_lbas)?;
        Ok(d)
    }

    /// The zones (all, or `count` from `zone`): dicts with the fields of
    /// `zns zone report --json` (nvme-cli's report-zones: slba, wp, cap,
    /// state as `EMPTY`, `IMP_OPENED`, …) and the zone's index, zone.
    #[pyo3(signature = (zone = 0, count = None))]
    fn report_zones<'py>(
        &mut self,
        py: Python<'py>,
        zone: u64,
        count: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let c = self.cfg()?;
        let start = self.zslba(zone)?;
        let (rt, dev, _) = self.parts()?;
        let fut = dev.report_zones(
            start,
            ReportFilter::All,
            count.unwrap_or(c.zone_count as usize),
        );
        let zones = rt
            .block_on(fut)
            .map_err(|e| nvme_err(py, "report zones", e))?;
        zones
            .iter()
            .map(|z| {
                let d = PyDict::new(py);
                d.set_item("zone", z.start_lba / c.zone_size_lbas.max(1))?;
                d.set_item("slba", z.start_lba)?;
                d.set_item("wp", z.write_pointer)?;
                d.set_item("cap", z.capacity_lbas)?;
                d.set_item("state", z.state.nvme_cli_name())?;
                Ok(d)
            })
            .collect()
    }

    /// Writes `nlb` blocks at `slba` (stamp data, or `data` of nlb blocks);
    /// the virtual latency, ns.
    #[pyo3(signature = (slba, nlb = 1, data = None, fua = false))]
    fn write(
        &mut self,
        py: Python<'_>,
        slba: u64,
        nlb: u64,
        data: Option<Vec<u8>>,
        fua: bool,
    ) -> PyResult<u64> {
        let lba_bytes = self.cfg()?.lba_bytes as usize;
        let buf = block_data(data, nlb, lba_bytes, slba)?;
        let (rt, dev, lat) = self.parts()?;
        let start = rt.now_ns();
        let r = rt.block_on(dev.write(slba, &buf, IoFlags::with_fua(fua)));
        *lat = rt.now_ns() - start;
        r.map_err(|e| nvme_err(py, "write", e))?;
        Ok(self.last_latency_ns)
    }

    /// Appends `nlb` blocks to zone `zone`; the LBA the device assigned.
    #[pyo3(signature = (zone, nlb = 1, data = None))]
    fn append(
        &mut self,
        py: Python<'_>,
        zone: u64,
        nlb: u64,
        data: Option<Vec<u8>>,
    ) -> PyResult<u64> {
        let lba_bytes = self.cfg()?.lba_bytes as usize;
        let zslba = self.zslba(zone)?;
        let buf = block_data(data, nlb, lba_bytes, zslba)?;
        let (rt, dev, lat) = self.parts()?;
        let start = rt.now_ns();
        let r = rt.block_on(dev.append(zslba, &buf, IoFlags::default()));
        *lat = rt.now_ns() - start;
        r.map_err(|e| nvme_err(py, "append", e))
    }

    /// Reads `nlb` blocks at `slba`.
    #[pyo3(signature = (slba, nlb = 1))]
    fn read<'py>(&mut self, py: Python<'py>, slba: u64, nlb: u64) -> PyResult<Bound<'py, PyBytes>> {
        let lba_bytes = self.cfg()?.lba_bytes as usize;
        let len = checked_len(nlb, lba_bytes)?;
        let mut buf = vec![0u8; len];
        let (rt, dev, lat) = self.parts()?;
        let start = rt.now_ns();
        let r = rt.block_on(dev.read(slba, &mut buf));
        *lat = rt.now_ns() - start;
        r.map_err(|e| nvme_err(py, "read", e))?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Opens zone `zone` (with a ZRWA when `zrwa`); the latency, ns.
    #[pyo3(signature = (zone, zrwa = false))]
    fn open(&mut self, py: Python<'_>, zone: u64, zrwa: bool) -> PyResult<u64> {
        let s = self.zslba(zone)?;
        self.send(py, ZoneAction::Open { zrwa }, s, false)
    }

    /// Closes zone `zone`, or every zone with `all=True` (one of the two).
    #[pyo3(signature = (zone = None, all = false))]
    fn close(&mut self, py: Python<'_>, zone: Option<u64>, all: bool) -> PyResult<u64> {
        let s = self.zone_or_all("close", zone, all)?;
        self.send(py, ZoneAction::Close, s, all)
    }

    /// Finishes zone `zone`, or every zone with `all=True` (one of the two).
    #[pyo3(signature = (zone = None, all = false))]
    fn finish(&mut self, py: Python<'_>, zone: Option<u64>, all: bool) -> PyResult<u64> {
        let s = self.zone_or_all("finish", zone, all)?;
        self.send(py, ZoneAction::Finish, s, all)
    }

    /// Resets zone `zone`, or every zone with `all=True` (one of the two).
    #[pyo3(signature = (zone = None, all = false))]
    fn reset(&mut self, py: Python<'_>, zone: Option<u64>, all: bool) -> PyResult<u64> {
        let s = self.zone_or_all("reset", zone, all)?;
        self.send(py, ZoneAction::Reset, s, all)
    }

    /// Commits a zone's ZRWA up to and including `lba`.
    fn zrwa_flush(&mut self, py: Python<'_>, lba: u64) -> PyResult<u64> {
        self.send(py, ZoneAction::FlushZrwa, lba, false)
    }

    fn __repr__(&self) -> String {
        format!("Device({:?}, now_ns={})", self.name, self.rt.now_ns())
    }
}

fn checked_len(nlb: u64, lba_bytes: usize) -> PyResult<usize> {
    if nlb == 0 {
        return Err(zns_err("nlb=0: at least one block"));
    }
    usize::try_from(nlb)
        .ok()
        .and_then(|n| n.checked_mul(lba_bytes))
        .filter(|n| *n <= 1 << 30)
        .ok_or_else(|| zns_err(format!("nlb={nlb}: more than 1 GiB in one command")))
}

fn block_data(data: Option<Vec<u8>>, nlb: u64, lba_bytes: usize, tag: u64) -> PyResult<Vec<u8>> {
    let len = checked_len(nlb, lba_bytes)?;
    match data {
        Some(d) if d.len() == len => Ok(d),
        Some(d) => Err(zns_err(format!(
            "data: {} bytes for {nlb} blocks of {lba_bytes} bytes ({len})",
            d.len()
        ))),
        None => {
            let mut buf = vec![0u8; len];
            zns_device::trace::fill_stamps(&mut buf, lba_bytes, tag);
            Ok(buf)
        }
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ZnsError", m.py().get_type::<ZnsError>())?;
    m.add("NvmeError", m.py().get_type::<NvmeError>())?;
    m.add_class::<Device>()?;
    m.add_function(wrap_pyfunction!(bench_job, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(fidelity, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_pending, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_write_record, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_finish, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(plot, m)?)?;
    Ok(())
}
