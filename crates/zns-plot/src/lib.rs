//! Figures of znskit: one look for every PNG the tools draw. This crate owns
//! the palette ([`COLORS`]), the chart frame (caption, axis descriptions,
//! light grid: [`frame`]), a line series with its legend entry ([`line`]),
//! the legend box ([`draw_legend`]), horizontal reference lines such as a
//! paper's value ([`Reference`], [`reference_line`]), the plain line chart
//! of time series ([`line_chart`], with [`windowed_mean`] to smooth dense
//! series), the grouped bar chart of normalized results ([`bar_chart`])
//! and the look of each RAID design ([`raid_style`]: one
//! colour, marker and dash per system in every figure that shows it), and
//! the one CSV/Markdown writer of the tables beside the figures
//! ([`table`]). zns-repro (fidelity curves, the papers' figures) and
//! zns-cache (cache time series) draw through it; what is particular to a
//! figure (log axes, measured points, bounds) stays with its owner.

pub mod table;

use std::ops::Range;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A figure that could not be drawn or written: plotters' error as text
/// (its type is generic over the drawing backend), or a caller's own
/// reason for not drawing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> PlotError {
        PlotError(e.to_string())
    }
}

pub use plotters;

/// The line colours, in series order.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// The point marker of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// How a series is drawn: colour, marker at each point, solid or dashed
/// line. Series that may lie on top of each other differ in marker and
/// dash, not only in colour, so that both stay visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesStyle {
    pub color: RGBColor,
    pub marker: Marker,
    pub dashed: bool,
}

/// The look of a RAID design by its name (`raizn`, `raizn+`, `z`, `z+s`,
/// `z+s+m`, `zraid`; case-insensitive), the same in every figure; `None`
/// for other names. RAIZN is dashed with hollow-looking triangles because
/// it often lies on RAIZN+.
pub fn raid_style(name: &str) -> Option<SeriesStyle> {
    let (color, marker, dashed) = match name.to_ascii_lowercase().as_str() {
        "raizn" => (RGBColor(127, 127, 127), Marker::Triangle, true),
        "raizn+" => (RGBColor(31, 119, 180), Marker::Square, false),
        "z" => (RGBColor(255, 127, 14), Marker::Diamond, true),
        "z+s" => (RGBColor(148, 103, 189), Marker::Cross, false),
        "z+s+m" => (RGBColor(44, 160, 44), Marker::Triangle, false),
        "zraid" => (RGBColor(214, 39, 40), Marker::Circle, false),
        _ => return None,
    };
    Some(SeriesStyle {
        color,
        marker,
        dashed,
    })
}

/// A chart with two linear f64 axes.
pub type Chart2d<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Text sizes of a figure, in pixels, and the space around its plot.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub caption_px: u32,
    pub axis_desc_px: u32,
    pub labels_px: u32,
    pub margin_px: u32,
    pub x_label_area_px: u32,
    pub y_label_area_px: u32,
}

/// A figure of its own (1000 px wide).
pub const FULL: Style = Style {
    caption_px: 24,
    axis_desc_px: 18,
    labels_px: 15,
    margin_px: 15,
    x_label_area_px: 50,
    y_label_area_px: 80,
};

/// One of several panels side by side.
pub const PANEL: Style = Style {
    caption_px: 16,
    axis_desc_px: 13,
    labels_px: 12,
    margin_px: 8,
    x_label_area_px: 35,
    y_label_area_px: 55,
};

/// Tick label text of an axis value.
pub type TickFormat<'f> = &'f dyn Fn(&f64) -> String;

/// What a chart's frame shows: caption, axis descriptions (empty: none),
/// ranges and optional tick formats.
pub struct Axes<'f> {
    pub title: &'f str,
    pub x_label: &'f str,
    pub y_label: &'f str,
    pub x: Range<f64>,
    pub y: Range<f64>,
    pub x_format: Option<TickFormat<'f>>,
    pub y_format: Option<TickFormat<'f>>,
    /// Tick count on the x axis (plotters' default when `None`).
    pub x_ticks: Option<usize>,
}

impl<'f> Axes<'f> {
    /// Linear axes with default ticks.
    pub fn new(
        title: &'f str,
        x_label: &'f str,
        y_label: &'f str,
        x: Range<f64>,
        y: Range<f64>,
    ) -> Self {
        Axes {
            title,
            x_label,
            y_label,
            x,
            y,
            x_format: None,
            y_format: None,
            x_ticks: None,
        }
    }
}

/// Draws the frame of a chart (caption, grid, axes) on `area`.
pub fn frame<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, Shift>,
    axes: &Axes<'_>,
    style: Style,
) -> Result<Chart2d<'a, DB>, PlotError> {
    // a long title is set smaller rather than clipped at the edges (a
    // sans-serif character is about 0.55 em wide)
    let width_px = f64::from(area.dim_in_pixel().0);
    let fits_px = (width_px / (0.55 * axes.title.chars().count().max(1) as f64)) as u32;
    let caption_px = style.caption_px.min(fits_px).max(10);
    let mut chart = ChartBuilder::on(area)
        .caption(axes.title, ("sans-serif", caption_px))
        .margin(style.margin_px)
        .x_label_area_size(style.x_label_area_px)
        .y_label_area_size(style.y_label_area_px)
        .build_cartesian_2d(axes.x.clone(), axes.y.clone())
        .map_err(PlotError::from)?;
    let mut mesh = chart.configure_mesh();
    mesh.axis_desc_style(("sans-serif", style.axis_desc_px))
        .label_style(("sans-serif", style.labels_px))
        .light_line_style(RGBColor(235, 235, 235));
    if !axes.x_label.is_empty() {
        mesh.x_desc(axes.x_label);
    }
    if !axes.y_label.is_empty() {
        mesh.y_desc(axes.y_label);
    }
    if let Some(f) = axes.x_format {
        mesh.x_label_formatter(f);
    }
    if let Some(f) = axes.y_format {
        mesh.y_label_formatter(f);
    }
    if let Some(n) = axes.x_ticks {
        mesh.x_labels(n);
    }
    mesh.draw().map_err(PlotError::from)?;
    Ok(chart)
}

/// Draws a line through `points` in `color` with a legend entry `label`,
/// and a filled circle of `marker_px` at each point when given.
pub fn line<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart2d<'a, DB>,
    points: &[(f64, f64)],
    color: RGBColor,
    label: &str,
    marker_px: Option<u32>,
) -> Result<(), PlotError> {
    line_of_width(chart, points, color, 2, label, marker_px)
}

/// [`line`] `width_px` wide.
fn line_of_width<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart2d<'a, DB>,
    points: &[(f64, f64)],
    color: RGBColor,
    width_px: u32,
    label: &str,
    marker_px: Option<u32>,
) -> Result<(), PlotError> {
    let stroke = color.stroke_width(width_px);
    chart
        .draw_series(LineSeries::new(points.iter().copied(), stroke))
        .map_err(PlotError::from)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], stroke));
    if let Some(px) = marker_px {
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, px, color.filled())))
            .map_err(PlotError::from)?;
    }
    Ok(())
}

/// Draws a line through `points` in `style` (dashed or solid, a marker of
/// `marker_px` at each point) with a legend entry `label` showing both.
pub fn styled_line<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart2d<'a, DB>,
    points: &[(f64, f64)],
    style: SeriesStyle,
    label: &str,
    marker_px: u32,
) -> Result<(), PlotError> {
    let stroke = style.color.stroke_width(2);
    let anno = if style.dashed {
        chart
            .draw_series(DashedLineSeries::new(points.iter().copied(), 8, 5, stroke))
            .map_err(PlotError::from)?
    } else {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), stroke))
            .map_err(PlotError::from)?
    };
    let r = marker_px as i32;
    let fill = style.color.filled();
    // the legend shows the marker (a composed element cannot be a legend
    // entry of a backend that borrows its file name)
    anno.label(label);
    let shifted = move |shape: Vec<(i32, i32)>, (x, y): (i32, i32)| -> Vec<(i32, i32)> {
        shape.into_iter().map(|(a, b)| (a + x + 8, b + y)).collect()
    };
    match style.marker {
        Marker::Circle => anno.legend(move |(x, y)| Circle::new((x + 8, y), r, fill)),
        Marker::Square => anno
            .legend(move |(x, y)| Rectangle::new([(x + 8 - r, y - r), (x + 8 + r, y + r)], fill)),
        Marker::Triangle => anno.legend(move |at| Polygon::new(shifted(triangle(r), at), fill)),
        Marker::Diamond => anno.legend(move |at| Polygon::new(shifted(diamond(r), at), fill)),
        Marker::Cross => anno.legend(move |at| Polygon::new(shifted(cross(r), at), fill)),
    };
    let stroke = style.color.stroke_width(2);
    let pts = points.iter().copied();
    match style.marker {
        Marker::Circle => chart.draw_series(pts.map(|p| Circle::new(p, r, fill))),
        Marker::Square => chart.draw_series(
            pts.map(|p| EmptyElement::at(p) + Rectangle::new([(-r, -r), (r, r)], fill)),
        ),
        Marker::Triangle => {
            chart.draw_series(pts.map(|p| EmptyElement::at(p) + Polygon::new(triangle(r), fill)))
        }
        Marker::Diamond => {
            chart.draw_series(pts.map(|p| EmptyElement::at(p) + Polygon::new(diamond(r), fill)))
        }
        Marker::Cross => chart.draw_series(pts.map(|p| {
            EmptyElement::at(p)
                + PathElement::new(vec![(-r, -r), (r, r)], stroke)
                + PathElement::new(vec![(-r, r), (r, -r)], stroke)
        })),
    }
    .map_err(PlotError::from)?;
    Ok(())
}

/// The corners of a triangle marker of radius `r` around (0, 0).
fn triangle(r: i32) -> Vec<(i32, i32)> {
    vec![(0, -r - 1), (-r - 1, r), (r + 1, r)]
}

/// The corners of a diamond marker of radius `r` around (0, 0).
fn diamond(r: i32) -> Vec<(i32, i32)> {
    vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)]
}

/// The outline of an X of radius `r` and arm width 2 around (0, 0).
fn cross(r: i32) -> Vec<(i32, i32)> {
    let w = 2;
    vec![
        (-r, -r),
        (0, -w),
        (r, -r),
        (w, 0),
        (r, r),
        (0, w),
        (-r, r),
        (-w, 0),
    ]
}

/// Draws the series legend of `chart` (translucent white box, black border).
pub fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart2d<'a, DB>,
    position: SeriesLabelPosition,
    font_px: u32,
) -> Result<(), PlotError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", font_px))
        .draw()
        .map_err(PlotError::from)
}

/// A line chart: title, axis descriptions, named series of (x, y) and
/// horizontal reference lines (e.g. a paper's value).
#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    pub references: Vec<Reference>,
}

/// A horizontal dashed line at `y` across the chart in `color`, with a
/// legend entry `label` (empty: none).
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub y: f64,
    pub label: String,
    pub color: RGBColor,
}

impl Reference {
    /// A black line without a legend entry (e.g. 1.0 of normalized values).
    pub fn plain(y: f64) -> Reference {
        Reference {
            y,
            label: String::new(),
            color: BLACK,
        }
    }
}

/// Draws `r` as a dashed line from `x.start` to `x.end`.
pub fn reference_line<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart2d<'a, DB>,
    x: Range<f64>,
    r: &Reference,
) -> Result<(), PlotError> {
    let stroke = r.color.stroke_width(2);
    let anno = chart
        .draw_series(DashedLineSeries::new(
            [(x.start, r.y), (x.end, r.y)],
            10,
            6,
            stroke,
        ))
        .map_err(PlotError::from)?;
    if !r.label.is_empty() {
        anno.label(r.label.as_str()).legend(move |(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (8, 0)], stroke)
                + PathElement::new(vec![(14, 0), (22, 0)], stroke)
        });
    }
    Ok(())
}

/// The mean of `points` (sorted by x) over consecutive windows of
/// `window` in x: one point per window that holds any, at the window's
/// middle. A dense series (e.g. one sample a second over hours) drawn
/// this way shows its level instead of its noise.
pub fn windowed_mean(points: &[(f64, f64)], window: f64) -> Vec<(f64, f64)> {
    if window.is_nan() || window <= 0.0 {
        return points.to_vec();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let k = (points[i].0 / window).floor();
        let (mut sum, mut n) = (0.0, 0usize);
        while i < points.len() && (points[i].0 / window).floor() == k {
            sum += points[i].1;
            n += 1;
            i += 1;
        }
        out.push(((k + 0.5) * window, sum / n as f64));
    }
    out
}

/// The window, in x units, that leaves about `points_wanted` points of a
/// series spanning `span`: 1, 2 or 5 × a power of ten, at least 1 (whole
/// samples of a series sampled once per unit).
pub fn window_for(span: f64, points_wanted: usize) -> f64 {
    let raw = span / points_wanted.max(1) as f64;
    if raw.is_nan() || raw <= 1.0 {
        return 1.0;
    }
    let decade = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&w| w >= raw)
        .unwrap_or(10.0 * decade)
}

/// Tick text of `v` with no decimals when the axis spans `span` ≥ 10 (so
/// seconds read `5000`, not `5000.0`), else with two.
fn tick_text(v: f64, span: f64) -> String {
    if span >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The range of `values` (finite ones) from 0 when all are positive, with
/// 5 % headroom; (0, 1) when there are none.
pub fn range_from_zero(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    lo = lo.min(0.0);
    if hi <= lo {
        hi = lo + 1.0;
    }
    lo..hi + (hi - lo) * 0.05
}

/// The right-hand corner of a chart with fewer of `points` in it (upper or
/// lower quarter), for the legend.
fn emptier_right_corner<'p>(
    points: impl Iterator<Item = &'p (f64, f64)>,
    x: &Range<f64>,
    y: &Range<f64>,
) -> SeriesLabelPosition {
    let (x_mid, y_mid) = ((x.start + x.end) / 2.0, (y.start + y.end) / 2.0);
    let (mut upper, mut lower) = (0usize, 0usize);
    for &(_, py) in points.filter(|p| p.0 > x_mid) {
        if py > y_mid {
            upper += 1;
        } else {
            lower += 1;
        }
    }
    if upper > lower {
        SeriesLabelPosition::LowerRight
    } else {
        SeriesLabelPosition::UpperRight
    }
}

/// Draws `chart` into a 1000 × 600 PNG at `path`, one colour per series,
/// each series narrower than the one before it (so that one drawn over
/// another with the same values leaves it showing on both sides), the
/// legend in the emptier right-hand corner.
pub fn line_chart(chart: &LineChart, path: &Path) -> Result<(), PlotError> {
    let points = || chart.series.iter().flat_map(|s| s.1.iter());
    let x = range_from_zero(points().map(|p| p.0));
    let y = range_from_zero(
        points()
            .map(|p| p.1)
            .chain(chart.references.iter().map(|r| r.y)),
    );
    let x_span = x.end - x.start;
    let x_format = move |v: &f64| tick_text(*v, x_span);
    let legend = emptier_right_corner(points(), &x, &y);
    let mut axes = Axes::new(&chart.title, &chart.x_label, &chart.y_label, x.clone(), y);
    axes.x_format = Some(&x_format);
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(PlotError::from)?;
    let mut c = frame(&root, &axes, FULL)?;
    let n = chart.series.len() as u32;
    for (i, (label, points)) in (0u32..).zip(&chart.series) {
        let width_px = (2 + 2 * (n - 1 - i)).min(8);
        line_of_width(&mut c, points, color(i as usize), width_px, label, None)?;
    }
    for r in &chart.references {
        reference_line(&mut c, x.clone(), r)?;
    }
    draw_legend(&mut c, legend, FULL.labels_px)?;
    root.present().map_err(PlotError::from)
}

/// One bar: its value and an optional error bar (min, max); NaN: no bar.
pub type Bar = (f64, Option<(f64, f64)>);

/// A grouped bar chart: for each group (e.g. a workload) one bar per
/// series (e.g. a RAID variant), with an optional error bar (min, max)
/// each; dashed reference lines (e.g. 1.0 when values are normalized to
/// one series, a paper's value).
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    /// (series name, one bar per group).
    pub series: Vec<(String, Vec<Bar>)>,
    pub references: Vec<Reference>,
}

/// Draws `chart` into a 1000 × 600 PNG at `path`, series `i` in
/// [`color`]`(i)`.
pub fn bar_chart(chart: &BarChart, path: &Path) -> Result<(), PlotError> {
    bar_chart_colored(chart, "", &|i, _| color(i), path)
}

/// Draws `chart` into a 1000 × 600 PNG at `path` with `x_label` under the
/// groups (empty: none), series `i` named `name` in `color_of(i, name)`
/// (e.g. [`raid_style`]'s colour of a RAID design).
pub fn bar_chart_colored(
    chart: &BarChart,
    x_label: &str,
    color_of: &dyn Fn(usize, &str) -> RGBColor,
    path: &Path,
) -> Result<(), PlotError> {
    let n_groups = chart.groups.len().max(1);
    let n_series = chart.series.len().max(1);
    let values = chart.series.iter().flat_map(|(_, v)| {
        v.iter()
            .flat_map(|(y, e)| [Some(*y), e.map(|e| e.1)].into_iter().flatten())
    });
    let y = range_from_zero(values.chain(chart.references.iter().map(|r| r.y)));
    // room above the bars for the legend
    let y = y.start..y.end + (y.end - y.start) * 0.15;
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(PlotError::from)?;
    let groups = chart.groups.clone();
    let label = move |x: &f64| -> String {
        let g = x.round();
        if (x - g).abs() < 1e-6 && g >= 0.0 {
            groups.get(g as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut axes = Axes::new(
        &chart.title,
        x_label,
        &chart.y_label,
        -0.5..n_groups as f64 - 0.5,
        y,
    );
    axes.x_format = Some(&label);
    axes.x_ticks = Some(n_groups * 2 + 1);
    let mut c = frame(&root, &axes, FULL)?;
    let width = 0.8 / n_series as f64;
    for (si, (name, bars)) in chart.series.iter().enumerate() {
        let col = color_of(si, name);
        let left = |g: usize| g as f64 - 0.4 + si as f64 * width;
        let rects = bars
            .iter()
            .enumerate()
            .filter(|(_, b)| b.0.is_finite())
            .map(|(g, b)| {
                Rectangle::new([(left(g), 0.0), (left(g) + width * 0.9, b.0)], col.filled())
            });
        c.draw_series(rects)
            .map_err(PlotError::from)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
        let whiskers = bars.iter().enumerate().filter_map(|(g, b)| {
            let (lo, hi) = b.1?;
            let mid = left(g) + width * 0.45;
            Some(PathElement::new(
                vec![(mid, lo), (mid, hi)],
                BLACK.stroke_width(2),
            ))
        });
        c.draw_series(whiskers).map_err(PlotError::from)?;
    }
    for r in &chart.references {
        reference_line(&mut c, -0.5..n_groups as f64 - 0.5, r)?;
    }
    draw_legend(&mut c, SeriesLabelPosition::UpperRight, FULL.labels_px)?;
    root.present().map_err(PlotError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_start_at_zero_for_positive_values_and_have_headroom() {
        let r = range_from_zero([2.0, 10.0, f64::NAN].into_iter());
        assert_eq!(r.start, 0.0);
        assert!((r.end - 10.5).abs() < 1e-9, "{r:?}");
        let r = range_from_zero([-4.0, 4.0].into_iter());
        assert_eq!(r.start, -4.0);
        assert!((r.end - 4.4).abs() < 1e-9, "{r:?}");
        assert_eq!(range_from_zero(std::iter::empty()), 0.0..1.0);
        assert_eq!(range_from_zero([0.0].into_iter()), 0.0..1.0 + 0.05);
    }

    #[test]
    fn a_windowed_mean_averages_each_window_at_its_middle() {
        let pts: Vec<(f64, f64)> = (0..10).map(|t| (f64::from(t), f64::from(t % 2))).collect();
        assert_eq!(
            windowed_mean(&pts, 4.0),
            vec![(2.0, 0.5), (6.0, 0.5), (10.0, 0.5)]
        );
        assert_eq!(windowed_mean(&pts, 0.0), pts);
        // 26,400 one-second samples give about 200 points of 200 s
        assert_eq!(window_for(26_400.0, 200), 200.0);
        assert_eq!(window_for(100.0, 200), 1.0);
        assert_eq!(window_for(1_500.0, 200), 10.0);
        assert_eq!(tick_text(5000.0, 26_400.0), "5000");
        assert_eq!(tick_text(0.5, 1.0), "0.50");
    }

    #[test]
    fn a_line_chart_is_a_png_file() {
        let dir = std::env::temp_dir().join(format!("zns-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.png");
        let chart = LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                ("a".into(), vec![(0.0, 1.0), (1.0, 2.0)]),
                ("b".into(), vec![]),
            ],
            references: vec![Reference {
                y: 1.5,
                label: "paper".into(),
                color: color(0),
            }],
        };
        line_chart(&chart, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bar_chart_is_a_png_file() {
        let dir = std::env::temp_dir().join(format!("zns-plot-bars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bars.png");
        let chart = BarChart {
            title: "t".into(),
            y_label: "normalized".into(),
            groups: vec!["a".into(), "b".into()],
            series: vec![
                ("x".into(), vec![(1.0, Some((0.9, 1.1))), (1.0, None)]),
                ("y".into(), vec![(1.2, None), (f64::NAN, None)]),
            ],
            references: vec![Reference::plain(1.0)],
        };
        bar_chart(&chart, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
