//! The merged table of a sweep: one row per point in sweep order, the
//! columns `point`, `id`, the parameters, `status`, `error` and the
//! metrics (in the order they first appear); written as CSV and as
//! Parquet (flat schema, optional columns, typed by their values: all
//! booleans → BOOLEAN, all integers → INT64, all numbers → DOUBLE, else
//! UTF-8 strings). Host time is not a column: the table depends only on
//! the points, not on where they ran.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use zns_plot::table::csv_quote;

use serde_json::{Map, Value};

use crate::point::{value_text, Point, Record, Status};
use crate::SweepError;

/// Rows of named columns; `Value::Null` where a row has no value.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// What a row of a point without a record says in `status`.
pub const MISSING: &str = "missing";

impl Table {
    /// The table of `points`, from their records (`missing` for a point
    /// without one); `param_names` in the order the sweep gives them.
    pub fn merge(
        points: &[Point],
        param_names: &[String],
        records: &HashMap<String, Record>,
    ) -> Table {
        let mut metric_names: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for p in points {
            if let Some(r) = records.get(&p.id) {
                for k in r.metrics.keys() {
                    if seen.insert(k.clone()) {
                        metric_names.push(k.clone());
                    }
                }
            }
        }
        let mut columns = vec!["point".to_string(), "id".to_string()];
        columns.extend(param_names.iter().cloned());
        columns.push("status".into());
        columns.push("error".into());
        // a metric named like a parameter keeps its value under metric.NAME
        let metric_cols: Vec<String> = metric_names
            .iter()
            .map(|m| {
                if columns.contains(m) {
                    format!("metric.{m}")
                } else {
                    m.clone()
                }
            })
            .collect();
        columns.extend(metric_cols);
        let rows = points
            .iter()
            .map(|p| {
                let mut row = vec![Value::from(p.index as u64), Value::from(p.id.clone())];
                row.extend(
                    param_names
                        .iter()
                        .map(|k| p.params.get(k).cloned().unwrap_or(Value::Null)),
                );
                match records.get(&p.id) {
                    Some(r) => {
                        row.push(Value::from(match r.status {
                            Status::Ok => "ok",
                            Status::Error => "error",
                        }));
                        row.push(r.error.clone().map_or(Value::Null, Value::from));
                        row.extend(
                            metric_names
                                .iter()
                                .map(|m| r.metrics.get(m).cloned().unwrap_or(Value::Null)),
                        );
                    }
                    None => {
                        row.push(Value::from(MISSING));
                        row.push(Value::Null);
                        row.extend(metric_names.iter().map(|_| Value::Null));
                    }
                }
                row
            })
            .collect();
        Table { columns, rows }
    }

    /// The rows as JSON objects (column → value), for Python.
    pub fn to_objects(&self) -> Vec<Map<String, Value>> {
        self.rows
            .iter()
            .map(|r| {
                self.columns
                    .iter()
                    .cloned()
                    .zip(r.iter().cloned())
                    .collect()
            })
            .collect()
    }

    /// The index of column `name`, or an error listing the columns.
    pub fn column(&self, name: &str) -> Result<usize, SweepError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| {
            SweepError::Param(format!(
                "no column `{name}` in the sweep's table (columns: {})",
                self.columns.join(", ")
            ))
        })
    }

    /// CSV (RFC 4180 quoting; empty for no value).
    pub fn to_csv(&self) -> String {
        let mut s = String::new();
        let line = |cells: Vec<String>| -> String {
            let mut l = cells
                .iter()
                .map(|c| csv_quote(c))
                .collect::<Vec<_>>()
                .join(",");
            l.push('\n');
            l
        };
        s.push_str(&line(self.columns.clone()));
        for r in &self.rows {
            s.push_str(&line(
                r.iter()
                    .map(|v| match v {
                        Value::Null => String::new(),
                        v => value_text(v),
                    })
                    .collect(),
            ));
        }
        s
    }

    pub fn write_csv(&self, path: &Path) -> Result<(), SweepError> {
        std::fs::write(path, self.to_csv()).map_err(|e| SweepError::file(path, e))
    }

    /// Writes the table as one Parquet row group.
    pub fn write_parquet(&self, path: &Path) -> Result<(), SweepError> {
        self.parquet(path).map_err(|e| SweepError::file(path, e))
    }

    fn parquet(&self, path: &Path) -> Result<(), parquet::errors::ParquetError> {
        use parquet::basic::{LogicalType, Repetition, Type as Physical};
        use parquet::column::writer::ColumnWriter;
        use parquet::data_type::ByteArray;
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::types::Type;

        let kinds: Vec<Kind> = (0..self.columns.len()).map(|c| self.kind(c)).collect();
        let fields = self
            .columns
            .iter()
            .zip(&kinds)
            .map(|(name, k)| {
                let b = Type::primitive_type_builder(
                    name,
                    match k {
                        Kind::Bool => Physical::BOOLEAN,
                        Kind::Int => Physical::INT64,
                        Kind::Float => Physical::DOUBLE,
                        Kind::Text => Physical::BYTE_ARRAY,
                    },
                )
                .with_repetition(Repetition::OPTIONAL);
                let b = if *k == Kind::Text {
                    b.with_logical_type(Some(LogicalType::String))
                } else {
                    b
                };
                b.build().map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Type::group_type_builder("sweep")
            .with_fields(fields)
            .build()?;
        let file = std::fs::File::create(path)?;
        let props = WriterProperties::builder().build();
        let mut w = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))?;
        let mut rg = w.next_row_group()?;
        let mut c = 0;
        while let Some(mut col) = rg.next_column()? {
            let cells: Vec<&Value> = self.rows.iter().map(|r| &r[c]).collect();
            let defs: Vec<i16> = cells.iter().map(|v| i16::from(!v.is_null())).collect();
            let present = cells.iter().filter(|v| !v.is_null());
            match col.untyped() {
                ColumnWriter::BoolColumnWriter(t) => {
                    let v: Vec<bool> = present.filter_map(|v| v.as_bool()).collect();
                    t.write_batch(&v, Some(&defs), None)?;
                }
                ColumnWriter::Int64ColumnWriter(t) => {
                    let v: Vec<i64> = present.filter_map(|v| v.as_i64()).collect();
                    t.write_batch(&v, Some(&defs), None)?;
                }
                ColumnWriter::DoubleColumnWriter(t) => {
                    let v: Vec<f64> = present.filter_map(|v| v.as_f64()).collect();
                    t.write_batch(&v, Some(&defs), None)?;
                }
                ColumnWriter::ByteArrayColumnWriter(t) => {
                    let v: Vec<ByteArray> = present
                        .map(|v| ByteArray::from(value_text(v).into_bytes()))
                        .collect();
                    t.write_batch(&v, Some(&defs), None)?;
                }
                _ => {
                    return Err(parquet::errors::ParquetError::General(
                        "unexpected column type".into(),
                    ))
                }
            }
            col.close()?;
            c += 1;
        }
        rg.close()?;
        w.close()?;
        Ok(())
    }

    /// The Parquet type of column `c`, from its values.
    fn kind(&self, c: usize) -> Kind {
        let mut k: Option<Kind> = None;
        for r in &self.rows {
            let v = match &r[c] {
                Value::Null => continue,
                Value::Bool(_) => Kind::Bool,
                Value::Number(n) if n.is_i64() => Kind::Int,
                Value::Number(n) if n.is_f64() => Kind::Float,
                _ => Kind::Text,
            };
            k = Some(match (k, v) {
                (None, v) => v,
                (Some(a), b) if a == b => a,
                (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
                _ => Kind::Text,
            });
        }
        k.unwrap_or(Kind::Text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Float,
    Text,
}
