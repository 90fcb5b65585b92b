// The page's data: its one JSON block (a script element of type application/json, id
// page-data, which analyzer.report.files.page_data writes), parsed. What a script needs of the
// page that is not markup comes from here, never spliced into the script's source. The reports
// inline this file before their scripts; the service's pages load it from /static before theirs.
function pageData() {
  var block = document.getElementById('page-data');
  return block ? JSON.parse(block.textContent) : {};
}
