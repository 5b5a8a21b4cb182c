//! The one size rule of znskit, fio's (`kb_base=1024`): every size in a
//! device name, a job file or a command-line option is read by
//! [`parse_bytes`]. Defined in zns-core (`zns_core::units`, where the
//! table of suffixes is) so that the libraries below this crate use it
//! too; this is where the front ends reach it.

pub use zns_core::units::{check_whole_blocks, parse_bytes, split_number, SizeError};
