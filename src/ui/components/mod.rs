//! Pieces two or more pages share. A page never imports another page.

pub mod alert;
pub mod async_section;
pub mod attempts;
pub mod audit_table;
pub mod badge;
pub mod form;
pub mod links;
pub mod moment;
pub mod pager;
pub mod post_form;
pub mod receiver;
pub mod scope_card;
pub mod scope_table;
pub mod table;

/// `2026-11-22 07:40:12 UTC`: the same on the server and in the browser, so hydration
/// agrees. Written out field by field: `format` would bring chrono's format-string parser
/// into the page's code (docs/page-weight.md).
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_time_reads_to_the_second_in_utc() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-03-04T05:06:07.890+01:00")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(super::when(&t), "2026-03-04 04:06:07 UTC");
    }
}
