//! PNG line charts of the time series (drawn by zns-plot, as every znskit
//! figure): one chart per metric, one line per run, so experiment figures
//! overlay ZNS and block, or ZPLRU and CLRU. A long run's per-interval
//! samples are drawn as their mean over windows (about
//! [`POINTS_PER_SERIES`] points a line, the window in the title), so that
//! lines which overlap sample by sample still show their levels.

use std::path::Path;

use crate::error::CacheError;
use crate::run::RunReport;

pub use zns_plot::LineChart as Chart;

/// Draws `chart` into a 1000 × 600 PNG (zns-plot's line chart).
pub fn draw(chart: &Chart, path: &Path) -> Result<(), CacheError> {
    zns_plot::line_chart(chart, path).map_err(|e| CacheError::File {
        path: path.display().to_string(),
        message: format!("plot: {e}"),
    })
}

/// The metrics plotted per run, as (file name, title, y label, value; `None`
/// where the interval has no value).
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&crate::metrics::Sample) -> Option<f64>,
);

pub const METRICS: [Metric; 9] = [
    ("hit-ratio", "hit ratio (cumulative)", "hit ratio", |s| {
        Some(s.hit_ratio)
    }),
    ("get-throughput", "get throughput", "GiB/s", |s| {
        Some(s.get_gib_s)
    }),
    ("disk-read", "disk read throughput", "GiB/s", |s| {
        Some(s.read_gib_s)
    }),
    ("disk-write", "disk write throughput", "GiB/s", |s| {
        Some(s.write_gib_s)
    }),
    ("get-latency", "mean get latency per interval", "ms", |s| {
        Some(s.get_mean_ms)
    }),
    (
        "disk-read-latency",
        "mean chunk read latency per interval",
        "ms",
        |s| s.disk_read_mean_ms,
    ),
    (
        "disk-write-latency",
        "mean chunk write latency per interval",
        "ms",
        |s| s.disk_write_mean_ms,
    ),
    ("free-zones", "free zones", "zones", |s| {
        Some(f64::from(s.free_zones))
    }),
    (
        "device-waf",
        "device WAF over the last 30 intervals (FTL drives)",
        "flash / host bytes",
        |s| s.device_waf_window,
    ),
];

/// About how many points a line of a chart has: samples are averaged over
/// windows of the run's length / this (1, 2 or 5 × 10^k seconds).
pub const POINTS_PER_SERIES: usize = 200;

/// One chart per metric with one line per labelled run (a metric no run
/// has, such as the device WAF of ZNS runs, gets no chart); each line the
/// mean of its samples over windows of the same length in every chart.
pub fn comparison_charts(
    runs: &[(String, &RunReport)],
    title_prefix: &str,
) -> Vec<(&'static str, Chart)> {
    let span_s = runs
        .iter()
        .flat_map(|(_, r)| r.samples.last().map(|s| s.t_s))
        .fold(0.0, f64::max);
    let window_s = zns_plot::window_for(span_s, POINTS_PER_SERIES);
    let windowed = if window_s > 1.0 {
        format!(" (mean over {window_s:.0} s windows)")
    } else {
        String::new()
    };
    METRICS
        .iter()
        .filter_map(|(name, title, y, f)| {
            let series: Vec<(String, Vec<(f64, f64)>)> = runs
                .iter()
                .map(|(label, r)| {
                    let pts: Vec<(f64, f64)> = r
                        .samples
                        .iter()
                        .filter_map(|s| f(s).map(|v| (s.t_s, v)))
                        .collect();
                    let pts = if window_s > 1.0 {
                        zns_plot::windowed_mean(&pts, window_s)
                    } else {
                        pts
                    };
                    (label.clone(), pts)
                })
                .collect();
            series.iter().any(|(_, pts)| !pts.is_empty()).then(|| {
                (
                    *name,
                    Chart {
                        title: format!("{title_prefix}{title}{windowed}"),
                        x_label: "time (s, virtual)".into(),
                        y_label: (*y).into(),
                        series,
                        references: Vec::new(),
                    },
                )
            })
        })
        .collect()
}

pub(crate) fn run_plots(
    r: &RunReport,
    title_prefix: &str,
) -> Result<Vec<(&'static str, Chart)>, CacheError> {
    let label = format!("{} {}", r.backend.name(), r.policy.name());
    Ok(comparison_charts(&[(label, r)], title_prefix))
}
