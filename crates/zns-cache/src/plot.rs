//! PNG line charts of the time series (plotters, drawn the way
//! zns-bench's fidelity plots are): one chart per metric, one line per run,
//! so experiment figures overlay ZNS and block, or ZPLRU and CLRU.

use std::path::Path;

use plotters::prelude::*;

use crate::error::CacheError;
use crate::run::RunReport;

/// A chart: title, axis labels and named series of (x, y).
#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn bounds(v: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in v.filter(|x| x.is_finite()) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo > 0.0 {
        lo = 0.0;
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    (lo, hi + (hi - lo) * 0.05)
}

/// Draws `chart` into a 1000 × 600 PNG.
pub fn draw(chart: &Chart, path: &Path) -> Result<(), CacheError> {
    let err = |e: &dyn std::fmt::Display| CacheError::File {
        path: path.display().to_string(),
        message: format!("plot: {e}"),
    };
    let pts = || chart.series.iter().flat_map(|s| s.1.iter());
    let (x0, x1) = bounds(pts().map(|p| p.0));
    let (y0, y1) = bounds(pts().map(|p| p.1));
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut c = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| err(&e))?;
    c.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style(("sans-serif", 17))
        .label_style(("sans-serif", 14))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (label, points)) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        c.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label(label.as_str())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The metrics plotted per run, as (file name, title, y label, value).
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&crate::metrics::Sample) -> f64,
);

pub const METRICS: [Metric; 6] = [
    ("hit-ratio", "hit ratio (cumulative)", "hit ratio", |s| {
        s.hit_ratio
    }),
    ("get-throughput", "get throughput", "GiB/s", |s| s.get_gib_s),
    ("disk-read", "disk read throughput", "GiB/s", |s| {
        s.read_gib_s
    }),
    ("disk-write", "disk write throughput", "GiB/s", |s| {
        s.write_gib_s
    }),
    ("get-latency", "mean get latency per interval", "ms", |s| {
        s.get_mean_ms
    }),
    ("free-zones", "free zones", "zones", |s| {
        f64::from(s.free_zones)
    }),
];

/// One chart per metric with one line per labelled run.
pub fn comparison_charts(
    runs: &[(String, &RunReport)],
    title_prefix: &str,
) -> Vec<(&'static str, Chart)> {
    METRICS
        .iter()
        .map(|(name, title, y, f)| {
            (
                *name,
                Chart {
                    title: format!("{title_prefix}{title}"),
                    x_label: "time (s, virtual)".into(),
                    y_label: (*y).into(),
                    series: runs
                        .iter()
                        .map(|(label, r)| {
                            (
                                label.clone(),
                                r.samples.iter().map(|s| (s.t_s, f(s))).collect(),
                            )
                        })
                        .collect(),
                },
            )
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
