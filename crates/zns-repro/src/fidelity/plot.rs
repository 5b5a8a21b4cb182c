//! PNG and CSV output of the fidelity suite's curves: each figure overlays
//! the emulated series (solid lines, filled circles) on the real device's
//! measured points (dashed lines, crosses) of the same colour; the legend
//! names the device (`data_label` of the curve, default "ZN540 measured").

use std::path::Path;

use zns_plot::plotters::prelude::*;
use zns_plot::table::{Cell, Table};
use zns_plot::{color, draw_legend, frame, line, Axes, PlotError, FULL};

use super::report::CurveResult;

fn csv_cell(v: Option<f64>) -> Cell {
    Cell::opt(v, |v| format!("{v}"))
}

/// The figure as CSV: one row per x, an emulated and a measured column per
/// series (empty cell = no point).
pub fn curve_csv(c: &CurveResult) -> String {
    let mut xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * a.abs().max(1.0));
    let mut columns = vec![c.x_label.clone()];
    for s in &c.series {
        columns.push(format!("{} emulated", s.label));
        columns.push(format!("{} {}", s.label, c.data_label));
    }
    let mut table = Table::new(columns);
    for x in xs {
        let mut row = vec![Cell::text(format!("{x}"))];
        for s in &c.series {
            let p = s
                .points
                .iter()
                .find(|p| (p.x - x).abs() <= 1e-9 * x.abs().max(1.0));
            row.push(csv_cell(p.and_then(|p| p.emulated)));
            row.push(csv_cell(p.and_then(|p| p.measured)));
        }
        table.push(row);
    }
    table.to_csv()
}

fn axis_value(v: f64, log: bool) -> Option<f64> {
    if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

fn tick_label(v: f64, log: bool) -> String {
    let v = if log { 10f64.powf(v) } else { v };
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 || (a >= 1.0 && (v - v.round()).abs() < 1e-6) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.0e}")
    }
}

fn range(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if !log && lo > 0.0 && lo < hi * 0.5 {
        lo = 0.0;
    }
    let pad = ((hi - lo) * 0.05).max(if log { 0.05 } else { 1e-9 });
    (lo - pad, hi + pad)
}

fn dashed(
    points: &[(f64, f64)],
    color: RGBColor,
) -> impl Iterator<Item = PathElement<(f64, f64)>> + '_ {
    // Dashes as separate short path elements (independent of plotters'
    // dashed-line support).
    let segs: Vec<((f64, f64), (f64, f64))> = points.windows(2).map(|w| (w[0], w[1])).collect();
    segs.into_iter().flat_map(move |(a, b)| {
        let n = 8;
        (0..n).step_by(2).map(move |k| {
            let t0 = k as f64 / n as f64;
            let t1 = (k + 1) as f64 / n as f64;
            let p = |t: f64| (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            PathElement::new(vec![p(t0), p(t1)], color.stroke_width(2))
        })
    })
}

/// Draws the figure into a PNG file (1000 × 650).
pub fn draw_png(c: &CurveResult, path: &Path) -> Result<(), PlotError> {
    let emu: Vec<Vec<(f64, f64)>> = c
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|p| {
                    Some((axis_value(p.x, c.log_x)?, axis_value(p.emulated?, c.log_y)?))
                })
                .collect()
        })
        .collect();
    let meas: Vec<Vec<(f64, f64)>> = c
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|p| {
                    Some((axis_value(p.x, c.log_x)?, axis_value(p.measured?, c.log_y)?))
                })
                .collect()
        })
        .collect();
    let all = || emu.iter().chain(meas.iter()).flatten();
    let (x0, x1) = range(all().map(|p| p.0), c.log_x);
    let (y0, y1) = range(all().map(|p| p.1), c.log_y);

    let root = BitMapBackend::new(path, (1000, 650)).into_drawing_area();
    root.fill(&WHITE)?;
    let (lx, ly) = (c.log_x, c.log_y);
    let x_fmt = move |v: &f64| tick_label(*v, lx);
    let y_fmt = move |v: &f64| tick_label(*v, ly);
    let scale = |label: &str, log: bool| {
        if log {
            format!("{label} (log scale)")
        } else {
            label.to_string()
        }
    };
    let (x_label, y_label) = (scale(&c.x_label, c.log_x), scale(&c.y_label, c.log_y));
    let axes = Axes {
        x_format: Some(&x_fmt),
        y_format: Some(&y_fmt),
        ..Axes::new(&c.title, &x_label, &y_label, x0..x1, y0..y1)
    };
    let mut chart = frame(&root, &axes, FULL)?;
    for (i, s) in c.series.iter().enumerate() {
        let color = color(i);
        if !emu[i].is_empty() {
            line(
                &mut chart,
                &emu[i],
                color,
                &format!("{} (emulated)", s.label),
                Some(4),
            )?;
        }
        if !meas[i].is_empty() {
            chart.draw_series(dashed(&meas[i], color))?;
            chart
                .draw_series(
                    meas[i]
                        .iter()
                        .map(|p| Cross::new(*p, 6, color.stroke_width(2))),
                )?
                .label(format!("{} ({})", s.label, c.data_label))
                .legend(move |(x, y)| Cross::new((x + 12, y), 6, color.stroke_width(2)));
        }
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, FULL.labels_px)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::{CurvePoint, SeriesResult};

    #[test]
    fn csv_names_the_measured_device() {
        let c = CurveResult {
            id: "c".into(),
            title: "t".into(),
            x_label: "time (s)".into(),
            y_label: "MiB/s".into(),
            log_x: false,
            log_y: false,
            data_label: "SN640 measured".into(),
            series: vec![SeriesResult {
                label: "write".into(),
                points: vec![CurvePoint {
                    x: 10.0,
                    emulated: Some(500.0),
                    measured: Some(562.0),
                }],
                compared: 1,
                mean_abs_rel_error: None,
                max_abs_rel_error: None,
                max_error_at_x: None,
                tolerance: None,
                status: crate::fidelity::Status::Pending,
                errors: Vec::new(),
            }],
            png: None,
            csv: None,
            plot_error: None,
        };
        let csv = curve_csv(&c);
        assert!(
            csv.starts_with("time (s),write emulated,write SN640 measured\n"),
            "{csv}"
        );
        assert!(csv.contains("10,500,562"), "{csv}");
    }
}
