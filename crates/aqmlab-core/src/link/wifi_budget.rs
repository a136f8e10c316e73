//! The link budget of a WiFi BSS (`rate = "link_budget"`): the path loss between the AP
//! and a station, the power each end receives from the other, and per direction the
//! fastest MCS whose minimum receiver sensitivity that power meets.
//!
//! - Path loss: the TGax residential model (IEEE 802.11-14/0980r16, "TGax Simulation
//!   Scenarios", scenario 1), the TGn breakpoint model (free space to 5 m, then slope
//!   3.5) with a loss per wall and per floor, `d` in metres, `f_c` in GHz:
//!   `PL = 40.05 + 20·log10(f_c / 2.4) + 20·log10(min(d, 5)) + [d > 5]·35·log10(d / 5)
//!   + 18.3·F^((F + 2) / (F + 1) − 0.46) + 5·W`.
//! - Received power: `P_rx = P_tx(MCS) + G_tx + G_rx − PL` (dBm, dBi).
//! - MCS: among MCS 0 to `8·streams − 1`, the one with the highest data rate whose
//!   receiver minimum input sensitivity (IEEE 802.11-2012 Table 20-22, the row of its
//!   modulation and coding rate: MCS `8k + m` shares row `m`) is at most `P_rx`.
//!
//! Simplifications: the transmit power is the total over the spatial streams and each
//! stream is held to the single-stream sensitivity; no fading, no interference (the
//! study's channel was empty); the directional AP antenna's gain is its boresight gain.

use super::wifi::{max_mcs, HT_NDBPS};

/// IEEE 802.11-2012 Table 20-22: receiver minimum input sensitivity (dBm) for the
/// modulation and coding of HT MCS 0–7 (BPSK 1/2 … 64-QAM 5/6), 20 MHz and 40 MHz.
pub const MIN_SENSITIVITY_DBM: [[f64; 8]; 2] = [
    [-82.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0, -64.0],
    [-79.0, -76.0, -74.0, -71.0, -67.0, -63.0, -62.0, -61.0],
];

/// Breakpoint distance of the TGn/TGax residential model (m).
pub const BREAKPOINT_M: f64 = 5.0;

/// TGax residential path loss (dB) at `distance_m` (≥ 1 m) and `freq_mhz`, through
/// `walls` walls and `floors` floors (module doc).
pub fn residential_path_loss(distance_m: f64, freq_mhz: f64, walls: u32, floors: u32) -> f64 {
    let d = distance_m;
    let f = floors as f64;
    let near = 20.0 * d.min(BREAKPOINT_M).log10();
    let far = if d > BREAKPOINT_M {
        35.0 * (d / BREAKPOINT_M).log10()
    } else {
        0.0
    };
    let floor_loss = if floors == 0 {
        0.0
    } else {
        18.3 * f.powf((f + 2.0) / (f + 1.0) - 0.46)
    };
    40.05 + 20.0 * (freq_mhz / 2400.0).log10() + near + far + floor_loss + 5.0 * walls as f64
}

/// A transmitter: its conducted power per MCS row (MCS `8k + m` uses entry `m`) and its
/// antenna gain, which counts again when it receives.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Radio {
    pub tx_power_dbm: [f64; 8],
    pub antenna_gain_dbi: f64,
}

/// Ubiquiti NanoStation M5 (the residential testbed's AP), from its datasheet: transmit
/// power 27 dBm at MCS 0–3, 26, 24, 22, 21 dBm at MCS 4–7 (the same for MCS 8–15), and
/// its dual-polarity panel's 14.6 dBi (the lower end of the 14.6–16.1 dBi the datasheet
/// gives across 5 GHz).
pub const NANOSTATION_M5: Radio = Radio {
    tx_power_dbm: [27.0, 27.0, 27.0, 27.0, 26.0, 24.0, 22.0, 21.0],
    antenna_gain_dbi: 14.6,
};

/// Intel WiFi Link 5100 (the testbed's client): iwlwifi's cap on its target transmit
/// power, `IWLAGN_TX_POWER_TARGET_POWER_MAX` = 16 dBm (`iwl-agn-hw.h`), at every MCS; a
/// laptop's antenna with no published gain counted as 0 dBi.
pub const INTEL_5100: Radio = Radio {
    tx_power_dbm: [16.0; 8],
    antenna_gain_dbi: 0.0,
};

/// The outcome of one direction's link budget.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Budget {
    /// The chosen MCS.
    pub mcs: u32,
    /// Power at the receiver at that MCS (dBm).
    pub rx_dbm: f64,
    /// Its sensitivity (dBm): `rx_dbm − sensitivity` is the margin.
    pub sensitivity_dbm: f64,
}

/// The fastest MCS (0 to `8·streams − 1`) that `tx` reaches `rx_gain_dbi` with over
/// `path_loss_db` at `width_mhz`; ties in rate go to the lower sensitivity. `Err` holds
/// the power received at MCS 0 when not even MCS 0's sensitivity is met.
pub fn best_mcs(
    tx: &Radio,
    rx_gain_dbi: f64,
    path_loss_db: f64,
    streams: u32,
    width_mhz: u32,
) -> Result<Budget, f64> {
    let w = usize::from(width_mhz == 40);
    let rx_at = |m: u32| {
        tx.tx_power_dbm[(m % 8) as usize] + tx.antenna_gain_dbi + rx_gain_dbi - path_loss_db
    };
    let mut best: Option<(u32, Budget)> = None;
    for m in 0..=max_mcs(streams) {
        let row = (m % 8) as usize;
        let sens = MIN_SENSITIVITY_DBM[w][row];
        let rx = rx_at(m);
        if rx < sens {
            continue;
        }
        let ndbps = HT_NDBPS[w][row] * (m / 8 + 1);
        let better = match best {
            None => true,
            Some((n, b)) => ndbps > n || (ndbps == n && sens < b.sensitivity_dbm),
        };
        if better {
            best = Some((
                ndbps,
                Budget {
                    mcs: m,
                    rx_dbm: rx,
                    sensitivity_dbm: sens,
                },
            ));
        }
    }
    best.map(|(_, b)| b).ok_or_else(|| rx_at(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_loss_by_hand() {
        // 5 m at 5180 MHz through one wall: 40.05 + 20·log10(5.18/2.4) = 6.683
        // + 20·log10(5) = 13.979 + 5 = 65.71 dB
        let pl = residential_path_loss(5.0, 5180.0, 1, 0);
        assert!((pl - 65.712).abs() < 0.01, "{pl}");
        // 20 m: + 35·log10(4) = 21.07 more, no wall
        let pl20 = residential_path_loss(20.0, 5180.0, 0, 0);
        assert!((pl20 - (65.712 - 5.0 + 21.072)).abs() < 0.01, "{pl20}");
        // one floor: 18.3 · 1^(3/2 - 0.46) = 18.3 dB
        let f1 =
            residential_path_loss(5.0, 5180.0, 0, 1) - residential_path_loss(5.0, 5180.0, 0, 0);
        assert!((f1 - 18.3).abs() < 1e-9, "{f1}");
    }

    #[test]
    fn the_fastest_mcs_that_meets_its_sensitivity() {
        // a 15 dBm transmitter, no antenna gain, 20 MHz, one stream: received power
        // 15 − PL; MCS 7 needs −64 dBm (PL ≤ 79), MCS 4 −70 (PL ≤ 85), MCS 0 −82 (PL ≤ 97)
        let r = Radio {
            tx_power_dbm: [15.0; 8],
            antenna_gain_dbi: 0.0,
        };
        assert_eq!(best_mcs(&r, 0.0, 79.0, 1, 20).unwrap().mcs, 7);
        assert_eq!(best_mcs(&r, 0.0, 79.5, 1, 20).unwrap().mcs, 6);
        assert_eq!(best_mcs(&r, 0.0, 85.0, 1, 20).unwrap().mcs, 4);
        assert_eq!(best_mcs(&r, 0.0, 97.0, 1, 20).unwrap().mcs, 0);
        assert_eq!(best_mcs(&r, 0.0, 97.5, 1, 20), Err(-82.5));
        // 40 MHz rows are 3 dB stricter: −64 dBm meets row 4 (−67), not row 5 (−63)
        assert_eq!(best_mcs(&r, 0.0, 79.0, 1, 40).unwrap().mcs, 4);
        // two streams: MCS 8 + m beats m at the same row
        assert_eq!(best_mcs(&r, 0.0, 85.0, 2, 20).unwrap().mcs, 12);
        // −65 dBm: row 6 (−65) but not row 7: MCS 14 (2 × 234 bits per symbol)
        assert_eq!(best_mcs(&r, 0.0, 80.0, 2, 20).unwrap().mcs, 14);
    }

    #[test]
    fn the_testbed_at_five_metres_through_one_wall() {
        // downlink: 21 dBm (the Nanostation's MCS 7/15 power) + 14.6 dBi − 65.71 dB
        // = −30.11 dBm against −64: MCS 15. Uplink: 16 + 14.6 − 65.71 = −35.11 dBm: MCS 7.
        let pl = residential_path_loss(5.0, 5180.0, 1, 0);
        let down = best_mcs(&NANOSTATION_M5, INTEL_5100.antenna_gain_dbi, pl, 2, 20).unwrap();
        assert_eq!(down.mcs, 15);
        assert!((down.rx_dbm - -30.11).abs() < 0.01, "{down:?}");
        let up = best_mcs(&INTEL_5100, NANOSTATION_M5.antenna_gain_dbi, pl, 1, 20).unwrap();
        assert_eq!(up.mcs, 7);
        assert!((up.rx_dbm - -35.11).abs() < 0.01, "{up:?}");
    }
}
