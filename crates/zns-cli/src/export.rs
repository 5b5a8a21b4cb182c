//! `zns export-zones IMG --libzbd-dump FILE`: an image's zones in libzbd's
//! zone dump format, so that Debian's `zbd report FILE` shows them. The format
//! is `zns_linux::libzbd`'s; this module only opens the image and writes the
//! file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use zns_core::{ReportFilter, ZonedDevice};
use zns_sim::Runtime;

use crate::CliError;

#[derive(Args)]
pub struct ExportZonesArgs {
    /// Device image (see `zns create`).
    image: PathBuf,
    /// Namespace ID (default: the first zoned namespace).
    #[arg(long)]
    nsid: Option<u32>,
    /// Write libzbd's zone information dump to FILE (`zbd report FILE` reads it;
    /// `zbd dump` names such files PREFIX_zone_info.dump).
    #[arg(long, value_name = "FILE")]
    libzbd_dump: PathBuf,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

pub fn export_zones(args: ExportZonesArgs) -> Result<ExitCode, CliError> {
    let mut rt = Runtime::new(0);
    let dev = crate::zone::open_target(&mut rt, &args.image, args.nsid)?;
    let cfg = dev.config().clone();
    let zones = rt
        .block_on(dev.report_zones(0, ReportFilter::All, cfg.zone_count as usize))
        .map_err(CliError::Device)?;
    let bytes = zns_linux::libzbd::dump_bytes(&cfg, &zones, "znskit emulated ZNS")
        .map_err(|e| CliError::Input(format!("{}: {e}", args.image.display())))?;
    std::fs::write(&args.libzbd_dump, &bytes)
        .map_err(|e| CliError::Io(format!("{}: {e}", args.libzbd_dump.display())))?;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "image": args.image,
                "libzbd_dump": args.libzbd_dump,
                "zones": zones.len(),
                "bytes": bytes.len(),
            })
        );
    } else {
        outln!(
            "wrote {}: {} zones in libzbd's dump format ({} bytes); `zbd report {}` shows them",
            args.libzbd_dump.display(),
            zones.len(),
            bytes.len(),
            args.libzbd_dump.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
