//! Tests of the ZNS state machine (`zns_core::ZoneSet`): one binary, four parts.

mod common;
mod model;
mod scenarios;
mod status;
mod transitions;
