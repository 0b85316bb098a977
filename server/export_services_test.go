package server

import "github.com/xiaozhi-hub/hub/services"

// ServicesOf gives tests the hub's services, to wait for their state.
func ServicesOf(h *Hub) *services.Manager { return h.services }
