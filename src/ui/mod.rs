//! The console's pages and the pieces they share.

pub mod components;
pub mod data;
pub mod layout;
pub mod pages;
