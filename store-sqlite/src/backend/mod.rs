//! SQLite mechanics, apart from what the store does with its rows.

pub(crate) mod busy;
pub(crate) mod checkpoint;
pub(crate) mod connection;
pub(crate) mod opening;
pub(crate) mod poller;
pub(crate) mod reader;
pub(crate) mod signals;
pub(crate) mod static_bind;
pub(crate) mod writer;
