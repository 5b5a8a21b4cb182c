//! zns-device: placeholder (being written).
