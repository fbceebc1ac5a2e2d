package handler

// Prompt returns the instructions of a prompt version, and whether the
// version exists. A prompt version is never edited once messages name it:
// its text is part of the work that the key stands for, so a change of
// wording is a new version.
func Prompt(version string) (string, bool) {
	switch version {
	case "v1":
		return "Summarise the document below in at most three sentences. " +
			"Keep names, numbers and dates exactly as written. Reply with the summary only.", true
	case "v2":
		return "Summarise the document below as at most five short bullet points, " +
			"most important first. Keep names, numbers and dates exactly as written. Reply with the bullets only.", true
	}
	return "", false
}
