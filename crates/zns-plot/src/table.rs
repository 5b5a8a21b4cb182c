//! The tables beside the figures: one writer for every CSV and Markdown
//! table the tools write (a cache run's time series, a reproduction's
//! points and its paper-vs-ours summary). A table is named columns and
//! rows of cells already formatted by their owner (the number of digits
//! is the owner's choice); this module owns only the syntax: RFC 4180
//! quoting in CSV, the pipe table of Markdown, the aligned columns of a
//! terminal.

use std::borrow::Cow;

/// One cell, formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Text, quoted in CSV only when it must be (a comma, a quote, a line
    /// break).
    Text(String),
    /// Text always quoted in CSV: a name that may hold commas (a device
    /// name such as `5xpm1731a,aggregate=4`), quoted in every row so that
    /// the column reads the same whatever the name.
    Quoted(String),
}

impl Cell {
    /// A number or a name (quoted in CSV only when it must be).
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// A number with `digits` decimals.
    pub fn fixed(v: f64, digits: usize) -> Cell {
        Cell::Text(format!("{v:.digits$}"))
    }

    /// An optional value: empty for `None`.
    pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> Cell {
        Cell::Text(v.map(f).unwrap_or_default())
    }

    fn csv(&self) -> Cow<'_, str> {
        match self {
            Cell::Text(s) => csv_quote(s),
            Cell::Quoted(s) => Cow::Owned(format!("\"{}\"", s.replace('"', "\"\""))),
        }
    }

    fn markdown(&self) -> &str {
        match self {
            Cell::Text(s) | Cell::Quoted(s) => s,
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

/// `s` as a CSV cell (RFC 4180): quoted, its quotes doubled, when it holds
/// a comma, a quote or a line break.
pub fn csv_quote(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

/// Named columns and rows of formatted cells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Table {
        Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as columns; the writer does not check).
    pub fn push(&mut self, cells: impl IntoIterator<Item = Cell>) {
        self.rows.push(cells.into_iter().collect());
    }

    /// The rows added so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as CSV: a header line, then a line per row.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<Cow<str>> = self.columns.iter().map(|c| csv_quote(c)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<Cow<str>> = row.iter().map(Cell::csv).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// The table as a Markdown pipe table: `| a | b |`, `|---|---|`, a
    /// line per row.
    pub fn to_markdown(&self) -> String {
        let line = |cells: Vec<&str>| format!("| {} |\n", cells.join(" | "));
        let mut out = line(self.columns.iter().map(String::as_str).collect());
        out.push_str(&format!("|{}\n", "---|".repeat(self.columns.len())));
        for row in &self.rows {
            out.push_str(&line(row.iter().map(Cell::markdown).collect()));
        }
        out
    }

    /// The table as aligned text for a terminal: every column as wide as
    /// its widest cell (in characters), two spaces between columns, no
    /// trailing blanks.
    pub fn to_text(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.markdown().chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, &w)| format!("{c:<w$}"))
                .collect();
            format!("{}\n", padded.join("  ").trim_end())
        };
        let mut out = line(self.columns.iter().map(String::as_str).collect());
        for row in &self.rows {
            out.push_str(&line(row.iter().map(Cell::markdown).collect()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{Cell, Table};

    #[test]
    fn csv_quotes_what_must_be_and_what_is_asked() {
        let mut t = Table::new(["x", "a,b"]);
        t.push([Cell::text("1"), Cell::text("say \"hi\"")]);
        t.push([
            Cell::Quoted("5xzn540".into()),
            Cell::opt(None::<f64>, |v| v.to_string()),
        ]);
        assert_eq!(
            t.to_csv(),
            "x,\"a,b\"\n1,\"say \"\"hi\"\"\"\n\"5xzn540\",\n"
        );
    }

    #[test]
    fn markdown_is_a_pipe_table() {
        let mut t = Table::new(["measure", "ours"]);
        t.push([Cell::text("a"), Cell::text("1.000")]);
        assert_eq!(
            t.to_markdown(),
            "| measure | ours |\n|---|---|\n| a | 1.000 |\n"
        );
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn text_columns_are_as_wide_as_their_widest_cell() {
        let mut t = Table::new(["measure", "ours", "paper"]);
        t.push([
            Cell::text("a long measure"),
            Cell::text("1 zones"),
            Cell::text("≤ 0 %"),
        ]);
        t.push([Cell::text("b"), Cell::text("+0.2 %"), Cell::text("")]);
        assert_eq!(
            t.to_text(),
            "measure         ours     paper\na long measure  1 zones  ≤ 0 %\nb               +0.2 %\n"
        );
    }
}
