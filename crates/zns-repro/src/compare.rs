//! What every reproduction reports beside its figures: the paper's number
//! and ours, one [`PaperRow`] each, written as Markdown or CSV by the one
//! table writer (`zns_plot::table`). A row says what is measured, the
//! paper's figure (a number or the paper's words), ours, and optionally the
//! tolerance it is held to, the verdict, and the figure's role
//! (calibration: it set a model parameter; validation: it checks the
//! model), with a note on how ours compares.
//!
//! A row that checks one of the paper's statements (`zns repro zraid`'s
//! summary, `zns repro zncache`'s checks) carries the test it is held to
//! in words (`±5 points`) and its verdict; the constructors below build
//! the common tests, each with its tolerance stated.
//!
//! The fidelity suite's targets and ZNCache's cell-by-cell comparison keep
//! their own records (their JSON is part of `zns fidelity --json` and `zns
//! repro zncache --json`) and share [`Role`] and [`Verdict`].

use serde::{Deserialize, Serialize};
use zns_plot::table::{Cell, Table};

/// Whether a paper figure was used to set a model's parameters, checks
/// them, or is set against a diagnostic run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Calibration,
    Validation,
    /// A run changed in one respect to show what a validation figure's
    /// error comes from; not validation.
    Diagnostic,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Calibration => "calibration",
            Role::Validation => "validation",
            Role::Diagnostic => "diagnostic",
        }
    }
}

/// Whether ours is within the row's tolerance of the paper's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
}

impl Verdict {
    pub fn of(holds: bool) -> Verdict {
        if holds {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    /// As the summaries print it: `holds` / `DOES NOT HOLD`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "holds",
            Verdict::Fail => "DOES NOT HOLD",
        }
    }
}

/// One figure of a paper beside ours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaperRow {
    /// What is measured.
    pub what: String,
    /// The paper's figure: a number, or the paper's words.
    pub paper: String,
    /// Ours (none: not measured, with why in the note, or not a number).
    pub ours: Option<f64>,
    /// Ours as the paper states its figure (`+11.2 %`, `4.79x`, `1 zone`,
    /// `yes`), when a bare number would not say it; tables show this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ours_shown: Option<String>,
    /// The test ours must pass to hold, its tolerance stated (`±5 points`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds_if: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// How ours compares (ahead / behind, by how much) or why there is none.
    pub note: String,
}

impl PaperRow {
    /// A check of one of the paper's statements: ours (`shown` as the paper
    /// states its figure, `value` where it is a number), the test it is
    /// held to and whether it holds.
    pub fn check(
        what: &str,
        paper: String,
        value: Option<f64>,
        shown: String,
        holds_if: String,
        holds: bool,
    ) -> PaperRow {
        PaperRow {
            what: what.into(),
            paper,
            ours: value,
            ours_shown: Some(shown),
            holds_if: Some(holds_if),
            verdict: Some(Verdict::of(holds)),
            ..PaperRow::default()
        }
    }

    /// A relative change in percent that must point the paper's way.
    pub fn same_sign(what: &str, paper_pct: f64, ours_pct: f64) -> PaperRow {
        PaperRow::check(
            what,
            format!("{paper_pct:+.1}%"),
            Some(ours_pct),
            format!("{ours_pct:+.1}%"),
            "the same sign".into(),
            paper_pct.signum() == ours_pct.signum(),
        )
    }

    /// The paper finds no difference (`paper_pct`, within `band_pct`):
    /// ours is within the band too.
    pub fn within(what: &str, paper_pct: f64, ours_pct: f64, band_pct: f64) -> PaperRow {
        PaperRow::check(
            what,
            format!("{paper_pct:+.1}% (within ±{band_pct:.0}%)"),
            Some(ours_pct),
            format!("{ours_pct:+.1}%"),
            format!("within ±{band_pct:.0}%"),
            ours_pct.abs() <= band_pct,
        )
    }

    /// A yes/no statement the paper makes (yes) against ours.
    pub fn yes(what: &str, ours: bool) -> PaperRow {
        let text = |b: bool| if b { "yes" } else { "no" }.to_string();
        PaperRow::check(what, text(true), None, text(ours), "the same".into(), ours)
    }

    /// Whether the row is a check that holds.
    pub fn holds(&self) -> bool {
        self.verdict == Some(Verdict::Pass)
    }

    /// Ours as the tables show it: as the paper states it, else three
    /// decimals, `—` for none.
    pub fn ours_text(&self) -> String {
        match (&self.ours_shown, self.ours) {
            (Some(s), _) => s.clone(),
            (None, Some(v)) => format!("{v:.3}"),
            (None, None) => "—".to_string(),
        }
    }

    /// `[holds]` / `[DOES NOT HOLD]`, empty for a row without a verdict.
    pub fn verdict_text(&self) -> String {
        self.verdict
            .map_or(String::new(), |v| format!("[{}]", v.label()))
    }
}

/// The checks as aligned text columns for a terminal: measure, ours
/// (headed `ours_heading`), the paper's, the test and the verdict.
pub fn checks_text(rows: &[PaperRow], ours_heading: &str) -> String {
    let mut t = Table::new(["measure", ours_heading, "paper", "holds if", "verdict"]);
    for r in rows {
        t.push([
            Cell::text(r.what.as_str()),
            Cell::text(r.ours_text()),
            Cell::text(r.paper.as_str()),
            Cell::text(r.holds_if.clone().unwrap_or_default()),
            Cell::text(r.verdict_text()),
        ]);
    }
    t.to_text()
}

/// The rows as a Markdown table: `| measure | SOURCE | ours | note |`,
/// SOURCE naming whose figures the paper column holds (`paper`, `study`).
pub fn markdown(rows: &[PaperRow], source: &str) -> String {
    let mut t = Table::new(["measure", source, "ours", "note"]);
    for r in rows {
        t.push([
            Cell::text(r.what.as_str()),
            Cell::text(r.paper.as_str()),
            Cell::text(r.ours_text()),
            Cell::text(r.note.as_str()),
        ]);
    }
    t.to_markdown()
}

/// The rows as CSV (every field; empty cells for what a row lacks).
pub fn csv(rows: &[PaperRow]) -> String {
    let mut t = Table::new([
        "what", "paper", "ours", "holds_if", "verdict", "role", "note",
    ]);
    for r in rows {
        t.push([
            Cell::text(r.what.as_str()),
            Cell::text(r.paper.as_str()),
            Cell::opt(r.ours, |v| v.to_string()),
            Cell::text(r.holds_if.clone().unwrap_or_default()),
            Cell::opt(r.verdict, |v| {
                match v {
                    Verdict::Pass => "pass",
                    Verdict::Fail => "fail",
                }
                .to_string()
            }),
            Cell::opt(r.role, |v| v.name().to_string()),
            Cell::text(r.note.as_str()),
        ]);
    }
    t.to_csv()
}

#[cfg(test)]
mod tests {
    use super::{csv, markdown, PaperRow, Role};

    #[test]
    fn a_row_is_a_markdown_line_and_a_csv_line() {
        let rows = [PaperRow {
            what: "Fig. 9 gain".into(),
            paper: "+12 %".into(),
            ours: Some(0.1234),
            role: Some(Role::Validation),
            note: "behind, by 2 points".into(),
            ..PaperRow::default()
        }];
        assert_eq!(
            markdown(&rows, "paper"),
            "| measure | paper | ours | note |\n|---|---|---|---|\n| Fig. 9 gain | +12 % | 0.123 | behind, by 2 points |\n"
        );
        assert_eq!(
            csv(&rows),
            "what,paper,ours,holds_if,verdict,role,note\nFig. 9 gain,+12 %,0.1234,,,validation,\"behind, by 2 points\"\n"
        );
        let json = serde_json::to_string(&rows[0]).unwrap();
        assert!(!json.contains("holds_if") && json.contains("\"role\":\"validation\""));
    }
}
