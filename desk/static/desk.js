// Progressive enhancement only: every page works without it.
document.addEventListener("DOMContentLoaded", () => {
  const state = document.getElementById("state");
  if (state) state.addEventListener("change", () => state.form.submit());
  // A button that changes someone else's account asks once more (its words in data-confirm).
  for (const button of document.querySelectorAll("button[data-confirm]")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm(button.dataset.confirm)) event.preventDefault();
    });
  }
});
