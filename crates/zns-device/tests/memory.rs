//! The zn540 profile with the `none` store must fit in 64 MiB, including after
//! writing to every zone (a counting allocator measures the heap it holds).

use zns_core::{IoFlags, ZonedDevice};
use zns_device::{ControllerOptions, EmulatedZns, Profile};
use zns_sim::Runtime;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

#[test]
fn zn540_with_the_none_store_holds_less_than_64_mib() {
    let before = counting_alloc::live_bytes();
    let mut rt = Runtime::new(1);
    let dev = EmulatedZns::from_profile(
        &rt.handle(),
        Profile::builtin("zn540").unwrap(),
        ControllerOptions::default(),
    )
    .unwrap();
    let buf = vec![0u8; 64 * 4096];
    let zone_size = dev.config().zone_size_lbas;
    rt.block_on(async {
        // Touch every zone (one write each, then finish it to free the open resource).
        for z in 0..dev.config().zone_count as u64 {
            dev.write(z * zone_size, &buf, IoFlags::NONE).await.unwrap();
            dev.zone_send(zns_core::ZoneSendCmd {
                action: zns_core::ZoneAction::Close,
                slba: z * zone_size,
                select_all: false,
            })
            .await
            .unwrap();
            if (z + 1) % 14 == 0 {
                dev.zone_send(zns_core::ZoneSendCmd {
                    action: zns_core::ZoneAction::Reset,
                    slba: 0,
                    select_all: true,
                })
                .await
                .unwrap();
            }
        }
    });
    let held = counting_alloc::live_bytes().saturating_sub(before);
    assert!(held < 64 << 20, "zn540 + none store holds {held} bytes");
    drop(dev);
}
