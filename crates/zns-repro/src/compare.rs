//! What every reproduction reports beside its figures: the paper's number
//! and ours, one [`PaperRow`] each, written as Markdown or CSV by the one
//! table writer (`zns_plot::table`). A row says what is measured, the
//! paper's figure (a number or the paper's words), ours, and optionally the
//! tolerance it is held to, the verdict, and the figure's role
//! (calibration: it set a model parameter; validation: it checks the
//! model), with a note on how ours compares.
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

/// One figure of a paper beside ours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaperRow {
    /// What is measured.
    pub what: String,
    /// The paper's figure: a number, or the paper's words.
    pub paper: String,
    /// Ours (none: not measured, with why in the note).
    pub ours: Option<f64>,
    /// The relative error ours is held to, when the row has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// How ours compares (ahead / behind, by how much) or why there is none.
    pub note: String,
}

/// Ours as the tables show it: three decimals, `—` for none.
fn ours_text(ours: Option<f64>) -> String {
    ours.map_or("—".to_string(), |v| format!("{v:.3}"))
}

/// The rows as a Markdown table: `| measure | SOURCE | ours | note |`,
/// SOURCE naming whose figures the paper column holds (`paper`, `study`).
pub fn markdown(rows: &[PaperRow], source: &str) -> String {
    let mut t = Table::new(["measure", source, "ours", "note"]);
    for r in rows {
        t.push([
            Cell::text(r.what.as_str()),
            Cell::text(r.paper.as_str()),
            Cell::text(ours_text(r.ours)),
            Cell::text(r.note.as_str()),
        ]);
    }
    t.to_markdown()
}

/// The rows as CSV (every field; empty cells for what a row lacks).
pub fn csv(rows: &[PaperRow]) -> String {
    let mut t = Table::new([
        "what",
        "paper",
        "ours",
        "tolerance",
        "verdict",
        "role",
        "note",
    ]);
    for r in rows {
        t.push([
            Cell::text(r.what.as_str()),
            Cell::text(r.paper.as_str()),
            Cell::opt(r.ours, |v| v.to_string()),
            Cell::opt(r.tolerance, |v| v.to_string()),
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
            "what,paper,ours,tolerance,verdict,role,note\nFig. 9 gain,+12 %,0.1234,,,validation,\"behind, by 2 points\"\n"
        );
        let json = serde_json::to_string(&rows[0]).unwrap();
        assert!(!json.contains("tolerance") && json.contains("\"role\":\"validation\""));
    }
}
