package llama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OllamaPrefix marks a model name to resolve in the local Ollama store.
const OllamaPrefix = "ollama:"

const (
	ollamaRegistry  = "registry.ollama.ai"
	ollamaNamespace = "library"
	ollamaModelType = "application/vnd.ollama.image.model"
)

// OllamaModelsDir returns the local Ollama model store: $OLLAMA_MODELS,
// else ~/.ollama/models.
func OllamaModelsDir() (string, error) {
	if d := os.Getenv("OLLAMA_MODELS"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the Ollama model store: %w (set OLLAMA_MODELS)", err)
	}
	return filepath.Join(home, ".ollama", "models"), nil
}

// ResolveOllama returns the path of the GGUF blob of an Ollama model
// name such as "llama3.2", "llama3.2:1b", "user/model:tag" or
// "host/namespace/model:tag" (with or without the "ollama:" prefix),
// found through the model's manifest in the local store.
func ResolveOllama(name string) (string, error) {
	dir, err := OllamaModelsDir()
	if err != nil {
		return "", err
	}
	return resolveOllamaIn(dir, name)
}

func resolveOllamaIn(dir, name string) (string, error) {
	name = strings.TrimPrefix(name, OllamaPrefix)
	if name == "" {
		return "", fmt.Errorf("empty Ollama model name")
	}
	tag := "latest"
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
	}
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		parts = []string{ollamaRegistry, ollamaNamespace, parts[0]}
	case 2:
		parts = []string{ollamaRegistry, parts[0], parts[1]}
	case 3:
	default:
		return "", fmt.Errorf("Ollama model name %q: want model[:tag], namespace/model[:tag] or host/namespace/model[:tag]", name)
	}
	for _, p := range append(parts, tag) {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, `\`) {
			return "", fmt.Errorf("Ollama model name %q:%s has an empty or invalid part", name, tag)
		}
	}
	manifest := filepath.Join(append([]string{dir, "manifests"}, append(parts, tag)...)...)
	data, err := os.ReadFile(manifest)
	if os.IsNotExist(err) {
		return "", fmt.Errorf("Ollama model %s:%s not found: no manifest at %s (pull it with `ollama pull %s:%s`, or set OLLAMA_MODELS)", name, tag, manifest, name, tag)
	}
	if err != nil {
		return "", fmt.Errorf("Ollama model %s:%s: %w", name, tag, err)
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("Ollama manifest %s: %w", manifest, err)
	}
	for _, l := range m.Layers {
		if l.MediaType != ollamaModelType {
			continue
		}
		algo, hex, ok := strings.Cut(l.Digest, ":")
		if !ok || algo == "" || hex == "" || strings.ContainsAny(l.Digest, `/\`) {
			return "", fmt.Errorf("Ollama manifest %s: bad digest %q", manifest, l.Digest)
		}
		return filepath.Join(dir, "blobs", algo+"-"+hex), nil
	}
	return "", fmt.Errorf("Ollama manifest %s has no model layer (%s)", manifest, ollamaModelType)
}
