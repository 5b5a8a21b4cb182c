//! zns-sim: placeholder (being written).
