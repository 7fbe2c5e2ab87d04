// Progressive enhancement only: every page works without it.
document.addEventListener("DOMContentLoaded", () => {
  const state = document.getElementById("state");
  if (state) state.addEventListener("change", () => state.form.submit());
});
