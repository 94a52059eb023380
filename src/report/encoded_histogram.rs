//! A latency histogram as a result file stores it: HdrHistogram's compressed V2 encoding in base64 (the
//! form HdrHistogram's implementations exchange), and why a stored one cannot be used. A stored one is
//! checked (`histogram_check`) before it is decoded: nothing is allocated for what its header claims.

use crate::report::histogram_check::{self, Checked, Refusal};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

pub use crate::report::histogram_check::MAX_COUNT;

/// The most bytes of counts a file tool holds decoded at once: one test's histograms, its own and each
/// mixed command's (a histogram takes 264 KiB at 3 significant digits, 26 MiB at 5).
pub const HELD_AT_ONCE: u64 = 64 << 20;

/// Value of a histogram's `encoding` field.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// Why a stored histogram cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("unknown histogram encoding '{0}'")]
    Encoding(String),
    #[error("histogram is not base64: {0}")]
    Base64(#[source] base64::DecodeError),
    #[error("histogram refused: {0}")]
    Refused(#[from] Refusal),
    #[error(
        "histogram refused: its significant_figures {field} differs from its header's {header}"
    )]
    Figures { field: u8, header: u8 },
    #[error("histogram does not decode: {0}")]
    Decode(#[source] hdrhistogram::serialization::DeserializeError),
    /// Two histograms that cannot be added up (a merge).
    #[error("{0:?}")]
    Add(#[source] hdrhistogram::errors::AdditionError),
    /// A test whose histograms would take more than [`HELD_AT_ONCE`] decoded together.
    #[error(
        "its histograms (the test's and {commands} commands') take {mib} MiB decoded, more than the {} MiB a file tool holds at once",
        HELD_AT_ONCE >> 20
    )]
    Held { mib: u64, commands: usize },
    /// Two histograms whose counts would add up past [`MAX_COUNT`].
    #[error("histograms whose counts add up past {MAX_COUNT} (2^53): refused")]
    Total,
}

/// A latency histogram (nanoseconds) in HdrHistogram's compressed V2 encoding, base64.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EncodedHistogram {
    pub encoding: String,
    pub unit: String,
    pub significant_figures: u8,
    pub data: String,
}

impl EncodedHistogram {
    /// Encodes `h`.
    pub fn encode(h: &Histogram<u64>) -> Self {
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail, and every histogram here fits the V2 format.
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        EncodedHistogram {
            encoding: HISTOGRAM_ENCODING.into(),
            unit: "ns".into(),
            significant_figures: h.sigfig(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// Checks the stored histogram against the limits of `histogram_check` (and its `significant_figures`
    /// against its header) without decoding it: what decoding would allocate, and its total count.
    pub fn check(&self) -> Result<Checked, HistogramError> {
        if self.encoding != HISTOGRAM_ENCODING {
            return Err(HistogramError::Encoding(self.encoding.clone()));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.data.trim())
            .map_err(HistogramError::Base64)?;
        let checked = histogram_check::check(&bytes)?;
        if checked.digits != self.significant_figures {
            return Err(HistogramError::Figures {
                field: self.significant_figures,
                header: checked.digits,
            });
        }
        Ok(checked)
    }

    /// Bytes of the counts array decoding allocates.
    pub fn decoded_bytes(&self) -> Result<u64, HistogramError> {
        Ok(self.check()?.counts * 8)
    }

    /// Decodes the histogram, once checked.
    pub fn decode(&self) -> Result<Histogram<u64>, HistogramError> {
        let checked = self.check()?;
        Deserializer::new()
            .deserialize(&mut checked.v2.as_slice())
            .map_err(HistogramError::Decode)
    }
}

/// Adds `h` to `sum`, refusing a total past [`MAX_COUNT`] (hdrhistogram's addition saturates instead).
pub fn add_checked(sum: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<(), HistogramError> {
    match sum.len().checked_add(h.len()) {
        Some(total) if total <= MAX_COUNT => sum.add(h).map_err(HistogramError::Add),
        _ => Err(HistogramError::Total),
    }
}
