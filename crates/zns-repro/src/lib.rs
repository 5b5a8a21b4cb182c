//! zns-repro: the paper reproductions, a floor above the engines they
//! drive (zns-bench, zns-cache, zns-raid through zns-target, and zns-apps'
//! real programs). Each reproduction is a module of its own:
//!
//! - `fidelity`: the fidelity suite, every published ZN540 figure measured
//!   through the ordinary benchmark path (`zns fidelity`);
//! - `zraid`: the ZRAID paper (zraid-asplos25): its emulated figures in
//!   virtual time (`emulated`), its application figures on served arrays
//!   (`apps`) and the method check against the drive's db_bench
//!   (`dbcheck`) (`zns repro zraid`);
//! - `zncache`: the ZNCache paper's experiments (zncache-2025) and its
//!   measured cells (`zns repro zncache`);
//! - `study`: the ZNS integration study (zns-integration-study-2022;
//!   `zns repro zns-study`).
//!
//! They share `compare` (one paper-vs-ours row and one CSV/Markdown
//! writer) and `experiments` (the experiment files, compiled in so that an
//! installed `zns` needs no checkout).

pub mod compare;
pub mod experiments;
pub mod fidelity;
pub mod study;
pub mod zncache;
pub mod zraid;

/// A failed step of an application experiment (a profile it derives, a
/// figure it draws), as zns-apps' error, said by its own message.
pub(crate) fn step(e: impl std::fmt::Display) -> zns_apps::AppError {
    zns_apps::AppError::Step(e.to_string())
}
