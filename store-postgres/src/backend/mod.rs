//! PostgreSQL mechanics, apart from what the store does with its rows.

pub(crate) mod connect;
pub(crate) mod count_mirror;
pub(crate) mod db;
pub(crate) mod enqueue_group;
pub(crate) mod listener;
pub(crate) mod notify;
pub(crate) mod plans;
pub(crate) mod row;
pub(crate) mod unnamed;
