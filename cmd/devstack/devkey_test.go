package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func TestKeptSecretSurvivesRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "dev-api-key")
	first, err := keptSecret(path, "mc", models.ModeTest)
	require.NoError(t, err)
	mode, err := models.ParseAPIKey("mc", first)
	require.NoError(t, err)
	assert.Equal(t, models.ModeTest, mode)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only its owner reads the key")

	again, err := keptSecret(path, "mc", models.ModeTest)
	require.NoError(t, err)
	assert.Equal(t, first, again, "a restart prints the key already exported")

	// A key of the other mode, or anything else, is not reused.
	live, err := keptSecret(path, "mc", models.ModeLive)
	require.NoError(t, err)
	mode, err = models.ParseAPIKey("mc", live)
	require.NoError(t, err)
	assert.Equal(t, models.ModeLive, mode)
	require.NoError(t, os.WriteFile(path, []byte("not a key\n"), 0o600))
	fresh, err := keptSecret(path, "mc", models.ModeTest)
	require.NoError(t, err)
	assert.NotEqual(t, first, fresh)
	_, err = models.ParseAPIKey("mc", fresh)
	assert.NoError(t, err)
}
