//! A sweep's table as a figure in the project's style (zns-plot's line
//! chart): one column against another, one line per value of a third;
//! the rows of a line that share an x (seeds, or parameters not plotted)
//! are averaged. Only the points that ran to the end are drawn (a table
//! without a `status` column: every row). Next to
//! the PNG, a CSV of the numbers drawn.

use std::collections::BTreeMap;
use std::path::Path;

use crate::point::value_text;
use crate::table::Table;
use crate::SweepError;

/// What to draw.
#[derive(Debug, Clone)]
pub struct PlotSpec {
    pub x: String,
    pub y: String,
    /// One line per value of this column (None: one line).
    pub by: Option<String>,
    pub title: Option<String>,
}

/// A line of a figure: its label and its (x, y) points, sorted by x.
pub type Line = (String, Vec<(f64, f64)>);

/// The lines of `spec` from `table`: (label, sorted (x, mean y)).
pub fn series(table: &Table, spec: &PlotSpec) -> Result<Vec<Line>, SweepError> {
    let x = table.column(&spec.x)?;
    let y = table.column(&spec.y)?;
    let by = spec.by.as_deref().map(|b| table.column(b)).transpose()?;
    // a table without `status` (a frame of the user's) has every row drawn
    let status = table.columns.iter().position(|c| c == "status");
    // line label -> x (as bits, ordered by value) -> (sum, n); labels in first-seen order
    let mut order: Vec<String> = Vec::new();
    let mut acc: BTreeMap<String, BTreeMap<i64, (f64, f64, usize)>> = BTreeMap::new();
    let mut numeric_x = 0usize;
    for row in &table.rows {
        if status.is_some_and(|s| row[s].as_str() != Some("ok")) {
            continue;
        }
        let (Some(xv), Some(yv)) = (row[x].as_f64(), row[y].as_f64()) else {
            continue;
        };
        numeric_x += 1;
        let label = match by {
            Some(b) => format!(
                "{} = {}",
                spec.by.as_deref().unwrap_or(""),
                value_text(&row[b])
            ),
            None => spec.y.clone(),
        };
        if !acc.contains_key(&label) {
            order.push(label.clone());
        }
        // order x by value: f64 total order as a sortable integer
        let key = {
            let b = xv.to_bits() as i64;
            b ^ (((b >> 63) as u64) >> 1) as i64
        };
        let e = acc
            .entry(label)
            .or_default()
            .entry(key)
            .or_insert((xv, 0.0, 0));
        e.1 += yv;
        e.2 += 1;
    }
    if numeric_x == 0 {
        return Err(SweepError::Param(format!(
            "nothing to plot: no point that ran to the end has numbers in both `{}` and `{}`",
            spec.x, spec.y
        )));
    }
    Ok(order
        .into_iter()
        .map(|label| {
            let pts = acc[&label]
                .values()
                .map(|(x, sum, n)| (*x, sum / *n as f64))
                .collect();
            (label, pts)
        })
        .collect())
}

/// Draws `spec` from `table` into `png` (1000 × 600) and the numbers drawn
/// into the CSV beside it (same name, `.csv`).
pub fn plot(table: &Table, spec: &PlotSpec, png: &Path) -> Result<(), SweepError> {
    let lines = series(table, spec)?;
    let chart = zns_plot::LineChart {
        title: spec.title.clone().unwrap_or_else(|| match &spec.by {
            Some(b) => format!("{} against {}, by {}", spec.y, spec.x, b),
            None => format!("{} against {}", spec.y, spec.x),
        }),
        x_label: spec.x.clone(),
        y_label: spec.y.clone(),
        series: lines.clone(),
        references: Vec::new(),
    };
    zns_plot::line_chart(&chart, png)?;
    let mut csv = format!("line,{},{}\n", spec.x, spec.y);
    for (label, pts) in &lines {
        for (x, y) in pts {
            csv.push_str(&format!("\"{}\",{x},{y}\n", label.replace('"', "\"\"")));
        }
    }
    let csv_path = png.with_extension("csv");
    std::fs::write(&csv_path, csv).map_err(|e| SweepError::file(&csv_path, e))
}
