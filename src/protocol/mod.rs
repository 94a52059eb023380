//! The wire format, no I/O: the RESP reply scanner and decoders, cluster slots and redirects.

pub(crate) mod bounded;
pub(crate) mod cluster;
pub(crate) mod commands;
pub(crate) mod cursor;
pub(crate) mod digits;
pub(crate) mod in_place;
pub(crate) mod owners;
pub(crate) mod resp;
