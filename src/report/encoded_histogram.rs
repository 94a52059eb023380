//! A latency histogram as a result file stores it: HdrHistogram's compressed V2 encoding in base64 (the
//! form HdrHistogram's implementations exchange), and why a stored one cannot be used.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

/// Value of a histogram's `encoding` field.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// Why a stored histogram cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("unknown histogram encoding '{0}'")]
    Encoding(String),
    #[error("histogram is not base64: {0}")]
    Base64(#[source] base64::DecodeError),
    #[error("histogram does not decode: {0:?}")]
    Decode(#[source] hdrhistogram::serialization::DeserializeError),
    /// Two histograms that cannot be added up (a merge).
    #[error("{0:?}")]
    Add(#[source] hdrhistogram::errors::AdditionError),
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

    /// Decodes the histogram.
    pub fn decode(&self) -> Result<Histogram<u64>, HistogramError> {
        if self.encoding != HISTOGRAM_ENCODING {
            return Err(HistogramError::Encoding(self.encoding.clone()));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.data.trim())
            .map_err(HistogramError::Base64)?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(HistogramError::Decode)
    }
}
