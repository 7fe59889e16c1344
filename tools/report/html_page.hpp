// tools/report/html_page.hpp — the frame of layoutsim's HTML reports (`run --html`,
// `search --html`): one self-contained file, no network, the style and a small script
// of our own inline, the figures as inline SVG, and the machine-readable result embedded
// as JSON so that a notebook can read the same file.
//
// The script only adds to a page that is complete without it: a details line for the
// span or row under the pointer, micro-batch highlighting on the timeline, and the
// attributes a browser test reads (`data-ready`, `data-errors`, `data-spans`).
#pragma once

#include <string>
#include <vector>

namespace ls::tools {

/// One table: a header row and body rows of cells that are already HTML (escape text
/// with xml_escape). `numeric` columns are right-aligned (index < size, else ignored).
struct HtmlTable {
  std::string id;                     // element id ("" = none)
  std::vector<std::string> header;    // empty: no header row (a key / value table)
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;
};
std::string render_table(const HtmlTable& t);

struct HtmlPage {
  std::string title;        // <title> and the <h1>, as text (escaped here)
  std::string subtitle;     // one line under the title, as text
  std::string body;         // the sections, as HTML
  std::string data_json;    // embedded as <script type="application/json" id="layoutsim-data">
};

/// The whole document. Deterministic: the same page gives the same bytes.
std::string render_page(const HtmlPage& page);

/// `<section id="ID"><h2>HEADING</h2>INNER</section>`; the heading is text.
std::string html_section(const std::string& id, const std::string& heading, const std::string& inner);

/// An SVG coordinate or length: two decimals (a hundredth of a pixel; deterministic text).
std::string svg_number(double v);

/// JSON text made safe inside a <script> element: "</" is written "<\/" (same JSON value).
std::string script_safe_json(const std::string& json);

}  // namespace ls::tools
