//! The console's pages and the pieces they share.

pub mod components;
pub mod layout;
pub mod pages;
