// tools/report/html_page.cpp — the report pages' frame: style, script, tables.
#include "tools/report/html_page.hpp"

#include <fmt/format.h>

#include "tools/report/plot.hpp"

namespace ls::tools {

namespace {

// Kept short and plain: the page must read well printed and with the script off.
constexpr const char* kStyle = R"(body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1280px;padding:0 16px;color:#1b1f24}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.subtitle{color:#57606a;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 10px}th,td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#figures td:first-child{color:#57606a;white-space:nowrap}
pre{background:#f6f8fa;padding:10px;overflow-x:auto;font-size:12px}
.warning{margin:6px 0;padding:6px 10px;border-left:4px solid #d4a72c;background:#fff8c5}
.warning code{font-weight:600}
#details-line{min-height:1.45em;color:#24292f;font-family:ui-monospace,monospace;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#24292f}svg .straggler-label{fill:#cf222e;font-weight:600}
svg rect.span{stroke:none}svg rect.span.critical{stroke:#1b1f24;stroke-width:0.6}svg rect.span.dim{opacity:0.15}
svg rect.span:hover{stroke:#000;stroke-width:1}svg .bubble{fill:url(#hatch)}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
.tie{color:#9a6700}
div.scroll{overflow-x:auto}
)";

// Details of what is under the pointer, micro-batch highlighting on click, and the
// attributes a test reads. Any error the page raises is counted in data-errors.
constexpr const char* kScript = R"((function(){
var errors=0;
window.addEventListener('error',function(){errors++;document.body.dataset.errors=String(errors);});
var line=document.getElementById('details-line');
function describe(el){var t=el.querySelector('title');if(line&&t)line.textContent=t.textContent;}
var spans=document.querySelectorAll('svg rect.span');
spans.forEach(function(el){
el.addEventListener('mouseenter',function(){describe(el);});
el.addEventListener('click',function(){var mb=el.getAttribute('data-mb');
spans.forEach(function(o){o.classList.toggle('dim',mb!==null&&o.getAttribute('data-mb')!==mb);});});
});
document.querySelectorAll('svg [data-hover]').forEach(function(el){el.addEventListener('mouseenter',function(){describe(el);});});
document.body.dataset.spans=String(spans.length);
document.body.dataset.errors=String(errors);
document.body.dataset.ready='1';
})();
)";

}  // namespace

std::string render_table(const HtmlTable& t) {
  auto is_numeric = [&](std::size_t c) { return c < t.numeric.size() && t.numeric[c]; };
  std::string out = "<table";
  if (!t.id.empty()) out += fmt::format(" id=\"{}\"", xml_escape(t.id));
  out += ">";
  if (!t.header.empty()) {
    out += "<thead><tr>";
    for (std::size_t c = 0; c < t.header.size(); ++c) out += fmt::format("<th{}>{}</th>", is_numeric(c) ? " class=\"num\"" : "", t.header[c]);
    out += "</tr></thead>";
  }
  out += "<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) out += fmt::format("<td{}>{}</td>", is_numeric(c) ? " class=\"num\"" : "", row[c]);
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

std::string html_section(const std::string& id, const std::string& heading, const std::string& inner) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2>\n{}</section>\n", xml_escape(id), xml_escape(heading), inner);
}

std::string svg_number(double v) { return fmt::format("{:.2f}", v); }

std::string script_safe_json(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    // Inside a JSON string "\/" is "/", so the value is unchanged and no "</script" can end the element.
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out.push_back(json[i]);
    }
  }
  return out;
}

std::string render_page(const HtmlPage& page) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n", xml_escape(page.title), kStyle);
  out += fmt::format("<h1>{}</h1>\n<p class=\"subtitle\">{}</p>\n", xml_escape(page.title), xml_escape(page.subtitle));
  out += page.body;
  if (!page.data_json.empty())
    out += fmt::format("<script type=\"application/json\" id=\"layoutsim-data\">{}</script>\n", script_safe_json(page.data_json));
  out += fmt::format("<script>\n{}</script>\n</body></html>\n", kScript);
  return out;
}

}  // namespace ls::tools
