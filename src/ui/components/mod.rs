//! Pieces two or more pages share. A page never imports another page.

pub mod alert;
pub mod async_section;
pub mod attempts;
pub mod audit_table;
pub mod badge;
pub mod form;
pub mod links;
pub mod moment;
pub mod one_time;
pub mod pager;
pub mod post_form;
pub mod receiver;
pub mod scope_card;
pub mod scope_table;
pub mod table;
